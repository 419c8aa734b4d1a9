//! The vDSO's image: the kernel's copy with its debug info
//! (`/lib/modules/RELEASE/vdso/vdso64.so`) where installed, else the image this process
//! has mapped. Every process on one kernel maps the same vDSO, so either names the vDSO
//! addresses of a capture made on the running kernel, and neither names another kernel's.

use crate::{Error, Module, SearchPaths};

/// This process's mapped vDSO image, copied out of memory.
pub fn live_image() -> Option<Vec<u8>> {
    live_image_or_why().ok()
}

/// This process's mapped vDSO image, or why it cannot be read.
pub fn live_image_or_why() -> Result<Vec<u8>, Error> {
    live_image_or_reason().map_err(Error::NoVdso)
}

#[cfg(not(target_os = "linux"))]
fn live_image_or_reason() -> Result<Vec<u8>, String> {
    Err("the vDSO is Linux's: this process has none".into())
}

#[cfg(target_os = "linux")]
fn live_image_or_reason() -> Result<Vec<u8>, String> {
    // SAFETY: getauxval only reads the auxiliary vector.
    let base = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } as usize;
    if base == 0 {
        return Err("this process has no vDSO (no AT_SYSINFO_EHDR)".into());
    }
    let maps =
        std::fs::read_to_string("/proc/self/maps").map_err(|e| format!("/proc/self/maps: {e}"))?;
    let range = maps
        .lines()
        .find(|l| l.ends_with("[vdso]"))
        .and_then(|l| l.split_once(' '))
        .and_then(|(range, _)| range.split_once('-'))
        .and_then(|(s, e)| {
            Some((
                usize::from_str_radix(s, 16).ok()?,
                usize::from_str_radix(e, 16).ok()?,
            ))
        });
    match range {
        Some((start, end)) if start == base && end > start => {
            // SAFETY: [start, end) is this process's vDSO mapping, readable and never
            // unmapped.
            Ok(unsafe { std::slice::from_raw_parts(start as *const u8, end - start) }.to_vec())
        }
        Some((start, _)) => Err(format!(
            "/proc/self/maps puts [vdso] at {start:#x}, AT_SYSINFO_EHDR at {base:#x}"
        )),
        None => Err("/proc/self/maps lists no [vdso]".into()),
    }
}

/// The kernel's own copy of the 64-bit vDSO for `release`, if installed.
pub fn kernel_copy(release: &str) -> Option<std::path::PathBuf> {
    let p = std::path::Path::new("/lib/modules")
        .join(release)
        .join("vdso/vdso64.so");
    p.is_file().then_some(p)
}

/// The running kernel's vDSO as a module named `[vdso]`.
pub fn running() -> Result<Module, Error> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let live = live_image_or_why();
    if let Some(path) = kernel_copy(release.trim()) {
        if let Ok(m) = Module::open_in(&path, &SearchPaths::none()) {
            // The installed copy must be the image the kernel maps.
            let live_id = live.as_deref().ok().and_then(|b| {
                use object::Object;
                object::File::parse(b)
                    .ok()
                    .and_then(|f| f.build_id().ok().flatten().map(<[u8]>::to_vec))
            });
            if live_id.is_none() || live_id.as_deref() == m.build_id() {
                return Ok(m);
            }
        }
    }
    Module::from_image("[vdso]", live?)
}
