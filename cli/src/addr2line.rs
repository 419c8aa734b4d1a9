//! `sparkles addr2line`: source locations of addresses in an ELF file, in binutils
//! addr2line's format and flags.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use sparkles_symbolize::binutils::{self, Options};
use sparkles_symbolize::{Frame, Module, SearchPaths};

use crate::error::{self, Error};

/// `sparkles addr2line`'s flags, as binutils spells them.
#[derive(Debug, Clone, clap::Args)]
pub struct Addr2lineArgs {
    /// The ELF file.
    #[arg(short = 'e', long = "exe", default_value = "a.out")]
    exe: PathBuf,
    /// Print function names.
    #[arg(short = 'f', long = "functions")]
    functions: bool,
    /// Print inlined frames too.
    #[arg(short = 'i', long = "inlines")]
    inlines: bool,
    /// Demangle function names.
    #[arg(short = 'C', long = "demangle")]
    demangle: bool,
    /// Print each address first.
    #[arg(short = 'a', long = "addresses")]
    addresses: bool,
    /// One line per address.
    #[arg(short = 'p', long = "pretty-print")]
    pretty: bool,
    /// Another directory of separate debug files (`.build-id/xx/rest.debug` and debug
    /// links), searched before /usr/lib/debug; repeatable.
    #[arg(long = "debug-dir", value_name = "DIR")]
    debug_dirs: Vec<PathBuf>,
    /// Hex addresses (read from stdin when none are given).
    addrs: Vec<String>,
}

/// `sparkles addr2line`: the module opened once from its path (the same loading a capture's
/// modules get), each address named as it comes.
pub fn addr2line(args: &Addr2lineArgs) -> Result<(), Error> {
    let exe = &args.exe;
    let options = Options {
        functions: args.functions,
        inlines: args.inlines,
        demangle: args.demangle,
        addresses: args.addresses,
        pretty: args.pretty,
    };
    let mut paths = SearchPaths::default();
    paths
        .debug_dirs
        .splice(0..0, args.debug_dirs.iter().cloned());
    let module = Module::open_in(exe, &paths)?;
    if let Some(why) = module.debug_info().reason() {
        eprintln!("sparkles addr2line: {}: {why}", exe.display());
    }
    // Two threads, so output still follows each address as it comes (perf and other
    // tools drive addr2line interactively through pipes): this one parses addresses and
    // names them; the writer adds binutils's discriminators, whose table (every line
    // program of the module) is read while names are being found.
    let discriminators = module.discriminators();
    let (tx, rx) = std::sync::mpsc::channel::<(u64, Vec<Frame>)>();
    let writer = std::thread::spawn(move || -> Result<(), Error> {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        // Flushed whenever no further answer is ready, so an interactive reader sees each.
        let mut next = rx.recv().ok();
        while let Some((addr, mut frames)) = next.take() {
            if let Some(first) = frames.first_mut() {
                first.discriminator = discriminators.get(addr);
            }
            let text = binutils::format(addr, &frames, &options);
            let written = out.write_all(text.as_bytes()).and_then(|()| {
                next = rx.try_recv().ok();
                if next.is_none() {
                    out.flush()?;
                    next = rx.recv().ok();
                }
                Ok(())
            });
            if let Err(e) = written {
                // A reader that went away (`| head`) ends the output, not the command.
                return error::output(Err(e));
            }
        }
        error::output(out.flush())
    });
    // Why reading stopped: the writer is gone (its result is the command's), or an input
    // or read error.
    enum Stop {
        WriterGone,
        Failed(Error),
    }
    let one = |text: &str| -> Result<(), Stop> {
        let t = text.trim();
        // binutils reads every address as hex, with or without 0x.
        let addr = u64::from_str_radix(t.trim_start_matches("0x").trim_start_matches("0X"), 16)
            .map_err(|_| Stop::Failed(Error::Input(format!("'{t}' is not a hex address"))))?;
        let found = module.lookup(addr);
        if let Some(e) = found.error {
            eprintln!("sparkles addr2line: {e}: named from the symbol table");
        }
        tx.send((addr, found.frames)).map_err(|_| Stop::WriterGone)
    };
    let read = if args.addrs.is_empty() {
        std::io::stdin().lock().lines().try_for_each(|line| {
            let line = line.map_err(|source| {
                Stop::Failed(Error::Io {
                    path: PathBuf::from("standard input"),
                    source,
                })
            })?;
            if line.trim().is_empty() {
                Ok(())
            } else {
                one(&line)
            }
        })
    } else {
        args.addrs.iter().try_for_each(|a| one(a))
    };
    drop(tx);
    let written = writer.join().unwrap_or_else(|_| {
        Err(Error::Output(std::io::Error::other(
            "the output thread panicked",
        )))
    });
    match read {
        Err(Stop::WriterGone) | Ok(()) => written,
        Err(Stop::Failed(e)) => {
            written?;
            Err(e)
        }
    }
}
