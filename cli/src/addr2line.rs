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
    // Not freed: the command ends when its input does, and freeing the parsed DWARF of
    // a large binary took a tenth of a run; the kernel takes the memory back at exit.
    let module = std::mem::ManuallyDrop::new(Module::open_in(exe, &paths)?);
    if let Some(why) = module.debug_info().reason() {
        eprintln!("sparkles addr2line: {}: {why}", exe.display());
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(64 << 10, stdout.lock());
    let mut namer = Namer::new(&module);
    let mut text = String::new();
    // A batch of addresses: named (in parallel where it is large and there are cores), its
    // answers written in the order asked.
    let mut answer = |batch: &[&str],
                      out: &mut std::io::BufWriter<std::io::StdoutLock<'_>>|
     -> Result<(), Error> {
        // The addresses up to the first that is not one: those are answered, then the
        // error ends the command (as it would have one address at a time).
        let mut addrs = Vec::with_capacity(batch.len());
        let mut bad = None;
        for t in batch {
            let t = t.trim();
            // binutils reads every address as hex, with or without 0x.
            match u64::from_str_radix(t.trim_start_matches("0x").trim_start_matches("0X"), 16) {
                Ok(a) => addrs.push(a),
                Err(_) => {
                    bad = Some(Error::Input(format!("'{t}' is not a hex address")));
                    break;
                }
            }
        }
        for (addr, found) in addrs.iter().zip(namer.name(&addrs)) {
            if let Some(e) = found.error {
                eprintln!("sparkles addr2line: {e}: named from the symbol table");
            }
            text.clear();
            binutils::format_into(&mut text, *addr, &found.frames, &options);
            out.write_all(text.as_bytes()).map_err(Error::Output)?;
        }
        match bad {
            Some(e) => {
                // What was answered is written before the error ends the command.
                out.flush().map_err(Error::Output)?;
                Err(e)
            }
            None => Ok(()),
        }
    };
    // A reader that went away (`| head`) ends the output, not the command.
    let written = |r: Result<(), Error>| match r {
        Err(Error::Output(e)) => error::output(Err(e)),
        other => other,
    };
    if !args.addrs.is_empty() {
        let batch: Vec<&str> = args.addrs.iter().map(String::as_str).collect();
        written(answer(&batch, &mut out))?;
        return error::output(out.flush());
    }
    let stdin = std::io::stdin();
    // Large: the addresses already written are named as one batch (a pipe read returns
    // what is there, so an interactive caller still gets each answer at once).
    let mut input = std::io::BufReader::with_capacity(1 << 20, stdin.lock());
    let mut lines: Vec<String> = Vec::new();
    loop {
        // Flushed whenever no further address is waiting, so that a program driving
        // addr2line through pipes (perf does) sees each answer before it asks again; the
        // addresses already waiting are named together.
        if input.buffer().is_empty() {
            error::output(out.flush())?;
        }
        lines.clear();
        let mut ended = false;
        loop {
            let mut line = String::new();
            let n = input.read_line(&mut line).map_err(|source| Error::Io {
                path: PathBuf::from("standard input"),
                source,
            })?;
            if n == 0 {
                ended = true;
                break;
            }
            if !line.trim().is_empty() {
                lines.push(line);
            }
            // Another whole line already read: part of this batch.
            if !input.buffer().contains(&b'\n') || lines.len() >= MAX_BATCH {
                break;
            }
        }
        if !lines.is_empty() {
            let batch: Vec<&str> = lines.iter().map(String::as_str).collect();
            written(answer(&batch, &mut out))?;
        }
        if ended {
            break;
        }
    }
    error::output(out.flush())
}

/// Addresses named together at most.
const MAX_BATCH: usize = 1 << 16;

/// A batch this large is named on every core: each thread takes a run of the sorted
/// addresses (so that a unit's DWARF is parsed by one of them), with an addr2line
/// context of its own over the shared module.
const PARALLEL_AT: usize = 512;

/// Names addresses in a module, on as many threads as the batch deserves.
struct Namer<'m> {
    module: &'m Module,
    /// Each other thread's context over the module, made on that thread the first time
    /// it names (so that making it overlaps the naming here).
    workers: std::mem::ManuallyDrop<Vec<Option<Module>>>,
    threads: usize,
}

impl<'m> Namer<'m> {
    fn new(module: &'m Module) -> Namer<'m> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Namer {
            module,
            // Not freed, as the module is not (see `addr2line`).
            workers: std::mem::ManuallyDrop::new((1..threads).map(|_| None).collect()),
            threads,
        }
    }

    /// Each address's frames (the innermost with binutils's discriminator), in order.
    fn name(&mut self, addrs: &[u64]) -> Vec<sparkles_symbolize::Lookup> {
        let one = |m: &Module, addr: u64| {
            let mut found = m.lookup(addr);
            binutils::set_discriminator(m, addr, &mut found.frames);
            found
        };
        if addrs.len() < PARALLEL_AT || self.threads < 2 {
            return addrs.iter().map(|&a| one(self.module, a)).collect();
        }
        let mut order: Vec<usize> = (0..addrs.len()).collect();
        order.sort_unstable_by_key(|&i| addrs[i]);
        // Runs of the sorted addresses, taken by whichever thread is free: a thread whose
        // context is still being made, or that meets a costly unit, takes fewer.
        let run = (order.len() / 64).max(32);
        let runs: Vec<&[usize]> = order.chunks(run).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let take = || runs.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let module = self.module;
        let mut named: Vec<(usize, sparkles_symbolize::Lookup)> = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .workers
                .iter_mut()
                .map(|slot| {
                    let seed = slot.is_none().then(|| module.worker_seed());
                    let take = &take;
                    scope.spawn(move || {
                        let mut done = Vec::new();
                        if let Some(seed) = seed {
                            *slot = seed.worker().ok();
                        }
                        // A worker that could not be made takes nothing.
                        let Some(worker) = slot.as_ref() else {
                            return done;
                        };
                        while let Some(part) = take() {
                            done.extend(part.iter().map(|&i| (i, one(worker, addrs[i]))));
                        }
                        done
                    })
                })
                .collect();
            let mut all: Vec<(usize, sparkles_symbolize::Lookup)> = Vec::new();
            while let Some(part) = take() {
                all.extend(part.iter().map(|&i| (i, one(module, addrs[i]))));
            }
            for h in handles {
                // A worker that panicked: what it took is named again here.
                if let Ok(done) = h.join() {
                    all.extend(done);
                }
            }
            all
        });
        if named.len() < addrs.len() {
            let have: std::collections::HashSet<usize> = named.iter().map(|(i, _)| *i).collect();
            let missing: Vec<usize> = (0..addrs.len()).filter(|i| !have.contains(i)).collect();
            named.extend(missing.into_iter().map(|i| (i, one(module, addrs[i]))));
        }
        named.sort_unstable_by_key(|(i, _)| *i);
        named.into_iter().map(|(_, l)| l).collect()
    }
}
