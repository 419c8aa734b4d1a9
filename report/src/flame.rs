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

/// The colour of the frames the harness adds: the case's root and "all".
const HARNESS: inferno::flamegraph::color::Color = inferno::flamegraph::color::Color {
    r: 200,
    g: 200,
    b: 210,
};

/// Each frame's colour: its kind's, and the harness's for the frames it adds.
fn palette(folded: &Folded) -> inferno::flamegraph::color::PaletteMap {
    let mut palette = inferno::flamegraph::color::PaletteMap::default();
    for (name, kind) in &folded.kinds {
        palette.insert(name, colour(*kind));
    }
    // The frames the harness adds (the case's root, named after it, and inferno's
    // "all") are no code of anyone's: the harness's grey, never a kind's colour (inferno
    // would pick its own, often the kernel's red).
    palette.insert("all", HARNESS);
    for line in folded.text().lines() {
        let first = line.split(';').next().unwrap_or_default();
        let root = match line.contains(';') {
            true => first,
            false => first.rsplit_once(' ').map_or(first, |(name, _)| name),
        };
        if !folded.kinds.contains_key(root) {
            palette.insert(root, HARNESS);
        }
    }
    palette
}

/// The flamegraph of a profile's folded stacks, as SVG text.
pub fn svg(profile: &Profile, folded: &Folded) -> Result<String, Error> {
    let mut palette = palette(folded);
    let text = folded.text();
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
        "user code blue, std orange, libraries yellow, kernel red{}, the case's root grey; unwinding {} ({:.1}% truncated)",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_case_root_and_all_are_the_harness_colour() {
        let mut folded = Folded::parse("spin/same;{closure#0};spin 10\nother 3\n").unwrap();
        folded.kinds.insert("spin".into(), Kind::User);
        folded.kinds.insert("{closure#0}".into(), Kind::User);
        let p = palette(&folded);
        for frame in ["all", "spin/same", "other"] {
            assert_eq!(p.get(frame), Some(HARNESS), "{frame}");
        }
        assert_eq!(p.get("spin"), Some(colour(Kind::User)));
    }
}
