//! binutils addr2line's output format, so `sparkles addr2line` can stand in for it and be
//! compared with it line by line.

use std::fmt::Write;

use crate::{Frame, Module};

/// The frames binutils addr2line prints for `addr`: [`Module::frames`] with the innermost
/// row's discriminator, without the PLT's names (`puts@plt`), which binutils does not
/// give (it prints `??`).
pub fn frames(module: &Module, addr: u64) -> Vec<Frame> {
    let mut out = module.frames(addr);
    out.retain(|f| f.file.is_some() || !f.function.as_deref().is_some_and(|n| n.ends_with("@plt")));
    set_discriminator(module, addr, &mut out);
    out
}

/// The innermost frame's discriminator, read where binutils would print it: where some
/// frame of the chain has a line (`location` prints it after each such frame's). Where
/// none has, DWARF holds no row for `addr` and reading every line program for one (the
/// module's fallback) would be wasted.
pub fn set_discriminator(module: &Module, addr: u64, frames: &mut [Frame]) {
    let lined = frames
        .iter()
        .any(|f| f.file.is_some() && f.line.is_some_and(|l| l > 0));
    if let Some(first) = frames.first_mut().filter(|_| lined) {
        first.discriminator = module.discriminator(addr);
    }
}

/// The flags of binutils addr2line that shape its output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// `-f`: print function names.
    pub functions: bool,
    /// `-i`: print inlined frames.
    pub inlines: bool,
    /// `-C`: demangle.
    pub demangle: bool,
    /// `-a`: print the address first.
    pub addresses: bool,
    /// `-p`: one line per address.
    pub pretty: bool,
}

/// `discriminator` is the innermost row's: binutils prints it after every frame's location
/// in an inline chain, not only the innermost (addr2line.c keeps one variable for it).
/// Appended to `out`.
fn location(out: &mut String, f: Option<&Frame>, discriminator: Option<u32>) {
    let _ = match f {
        Some(Frame {
            file: Some(file),
            line,
            ..
        }) => match (line, discriminator) {
            (Some(l), Some(d)) if *l > 0 => write!(out, "{file}:{l} (discriminator {d})"),
            (Some(l), None) if *l > 0 => write!(out, "{file}:{l}"),
            _ => write!(out, "{file}:?"),
        },
        // A function known only from the symbol table: binutils says the line is unknown.
        Some(Frame {
            function: Some(_), ..
        }) => write!(out, "??:?"),
        _ => write!(out, "??:0"),
    };
}

/// The function's name binutils prints, appended to `out`.
fn name(out: &mut String, f: Option<&Frame>, o: &Options) {
    let n = f.and_then(|f| {
        if o.demangle {
            f.demangled.as_ref().or(f.function.as_ref())
        } else {
            f.function.as_ref()
        }
    });
    out.push_str(n.map_or("??", String::as_str));
}

/// The text binutils addr2line prints for `addr` with `frames` (innermost first).
pub fn format(addr: u64, frames: &[Frame], o: &Options) -> String {
    let mut out = String::new();
    format_into(&mut out, addr, frames, o);
    out
}

/// [`format`], appended to `out`.
pub fn format_into(out: &mut String, addr: u64, frames: &[Frame], o: &Options) {
    let discriminator = frames.first().and_then(|f| f.discriminator);
    let shown: Vec<Option<&Frame>> = if frames.is_empty() {
        vec![None]
    } else if o.inlines {
        frames.iter().map(Some).collect()
    } else {
        // Without -i binutils names the innermost function and its location.
        vec![frames.first()]
    };
    if o.pretty {
        if o.addresses {
            let _ = write!(out, "0x{addr:016x}: ");
        }
        for (i, f) in shown.iter().enumerate() {
            if i > 0 {
                out.push_str(" (inlined by) ");
            }
            if o.functions {
                name(out, *f, o);
                out.push_str(" at ");
            }
            location(out, *f, discriminator);
            out.push('\n');
        }
        return;
    }
    if o.addresses {
        let _ = writeln!(out, "0x{addr:016x}");
    }
    for f in shown {
        if o.functions {
            name(out, f, o);
            out.push('\n');
        }
        location(out, f, discriminator);
        out.push('\n');
    }
}

/// Every `addr2line` on `PATH` with the first line of its `--version`, in `PATH` order.
fn addr2lines_on_path() -> Vec<(std::path::PathBuf, String)> {
    let Some(path) = std::env::var_os("PATH") else {
        return Vec::new();
    };
    let mut out: Vec<(std::path::PathBuf, String)> = Vec::new();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join("addr2line");
        let real = std::fs::canonicalize(&candidate).unwrap_or_else(|_| candidate.clone());
        if !candidate.is_file() || out.iter().any(|(p, _)| p == &real) {
            continue;
        }
        if let Ok(o) = std::process::Command::new(&candidate)
            .arg("--version")
            .output()
        {
            let first = String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string();
            out.push((real, first));
        }
    }
    out
}

/// binutils's addr2line (`GNU addr2line …`), wherever it is on `PATH`: the addr2line
/// crate's tool, installed by cargo, is also called `addr2line` and may come first.
pub fn gnu_addr2line() -> Option<std::path::PathBuf> {
    addr2lines_on_path()
        .into_iter()
        .find(|(_, v)| v.starts_with("GNU addr2line"))
        .map(|(p, _)| p)
}

/// The addr2line crate's command-line tool (`cargo install addr2line --features bin`),
/// on `PATH` or in `~/.cargo/bin`.
pub fn crate_addr2line() -> Option<std::path::PathBuf> {
    let is_crate = |v: &str| v.starts_with("addr2line ") && !v.contains("GNU");
    addr2lines_on_path()
        .into_iter()
        .find(|(_, v)| is_crate(v))
        .map(|(p, _)| p)
        .or_else(|| {
            let p =
                std::path::PathBuf::from(std::env::var_os("HOME")?).join(".cargo/bin/addr2line");
            let o = std::process::Command::new(&p)
                .arg("--version")
                .output()
                .ok()?;
            is_crate(&String::from_utf8_lossy(&o.stdout)).then_some(p)
        })
}
