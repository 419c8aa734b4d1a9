//! Suggestions for a misspelled name: the known names closest to it.

/// Up to three of `candidates` closest to `target`, closest first.
pub fn closest(target: &str, candidates: impl IntoIterator<Item = String>) -> Vec<String> {
    let limit = (target.chars().count() / 3).max(1);
    let mut scored: Vec<(usize, String)> = candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(target, &c), c))
        .filter(|(d, _)| *d <= limit)
        .collect();
    if scored.is_empty() {
        return Vec::new();
    }
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}
