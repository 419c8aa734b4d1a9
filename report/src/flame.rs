//! Flamegraph SVGs through inferno: titled with the case, event, sample and lost counts,
//! searchable, frames coloured by kind.

use crate::profile::{Folded, Kind, Profile};
use crate::Error;

/// The colour of a kind: the user's code blue-green, std/core/alloc orange, libc and
/// other libraries yellow, the kernel red, unnamed grey.
fn colour(kind: Kind) -> inferno::flamegraph::color::Color {
    let (r, g, b) = match kind {
        Kind::User => (80, 180, 200),
        Kind::Std => (240, 150, 60),
        Kind::Library => (225, 205, 70),
        Kind::Kernel => (220, 80, 70),
        Kind::Unknown => (170, 170, 170),
        Kind::OffCpu => (150, 110, 220),
    };
    inferno::flamegraph::color::Color { r, g, b }
}

/// The flamegraph of a profile's folded stacks, as SVG text.
pub fn svg(profile: &Profile, folded: &Folded) -> Result<String, Error> {
    let mut palette = inferno::flamegraph::color::PaletteMap::default();
    for (name, kind) in &folded.kinds {
        palette.insert(name, colour(*kind));
    }
    let mut options = inferno::flamegraph::Options::default();
    options.title = format!(
        "{}: {}, {} samples, {} lost{}",
        profile.case,
        profile.event,
        profile.samples,
        profile.lost,
        match profile.weighting.as_str() {
            "period" => String::new(),
            "latency" => ", weighted by access latency".into(),
            "wall" => match &profile.offcpu {
                Some(o) => format!(", wall clock: {}", o.summary()),
                None => ", wall clock".into(),
            },
            other => format!(", weighted by {other}"),
        }
    );
    options.subtitle = Some(format!(
        "user code blue, std orange, libraries yellow, kernel red{}; unwinding {} ({:.1}% truncated)",
        if profile.weighting == "wall" { ", waiting purple" } else { "" },
        profile.unwinding.mode, profile.unwinding.truncated_pct
    ));
    options.count_name = match profile.weighting.as_str() {
        "latency" => "cycles of latency".into(),
        "samples" => "samples".into(),
        "wall" => "ns".into(),
        _ => "weight".into(),
    };
    options.palette_map = Some(&mut palette);
    let text = folded.text();
    let mut out = Vec::new();
    if text.is_empty() {
        return Err(Error::Empty);
    }
    inferno::flamegraph::from_lines(&mut options, text.lines(), &mut out).map_err(|source| {
        Error::Render {
            what: "flamegraph",
            source,
        }
    })?;
    // inferno writes UTF-8 (it escapes what it takes from the names).
    Ok(String::from_utf8_lossy(&out).into_owned())
}
