//! `sparkles addr2line`: source locations of addresses in an ELF file, in binutils
//! addr2line's format and flags.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use sparkles_symbolize::binutils::{self, Options};
use sparkles_symbolize::{Module, SearchPaths};

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
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(64 << 10, stdout.lock());
    let mut text = String::new();
    // Each address named as it comes: its frames, the discriminator binutils prints (from
    // its unit's line program, read once per unit), the lines written.
    let mut one =
        |t: &str, out: &mut std::io::BufWriter<std::io::StdoutLock<'_>>| -> Result<(), Error> {
            let t = t.trim();
            // binutils reads every address as hex, with or without 0x.
            let addr = u64::from_str_radix(t.trim_start_matches("0x").trim_start_matches("0X"), 16)
                .map_err(|_| Error::Input(format!("'{t}' is not a hex address")))?;
            let mut found = module.lookup(addr);
            if let Some(e) = found.error {
                eprintln!("sparkles addr2line: {e}: named from the symbol table");
            }
            if let Some(first) = found.frames.first_mut() {
                first.discriminator = module.discriminator(addr);
            }
            text.clear();
            binutils::format_into(&mut text, addr, &found.frames, &options);
            out.write_all(text.as_bytes()).map_err(Error::Output)
        };
    // A reader that went away (`| head`) ends the output, not the command.
    let written = |r: Result<(), Error>| match r {
        Err(Error::Output(e)) => error::output(Err(e)),
        other => other,
    };
    if !args.addrs.is_empty() {
        for a in &args.addrs {
            written(one(a, &mut out))?;
        }
        return error::output(out.flush());
    }
    let stdin = std::io::stdin();
    let mut input = std::io::BufReader::with_capacity(64 << 10, stdin.lock());
    let mut line = String::new();
    loop {
        // Flushed whenever no further address is waiting, so that a program driving
        // addr2line through pipes (perf does) sees each answer before it asks again.
        if input.buffer().is_empty() {
            error::output(out.flush())?;
        }
        line.clear();
        let n = input.read_line(&mut line).map_err(|source| Error::Io {
            path: PathBuf::from("standard input"),
            source,
        })?;
        if n == 0 {
            break;
        }
        if !line.trim().is_empty() {
            written(one(&line, &mut out))?;
        }
    }
    error::output(out.flush())
}
