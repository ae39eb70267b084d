//! "Did you mean": the name closest to a misspelt one.

/// The candidate closest to `written`, when one is close enough to be a typo.
pub fn did_you_mean<'c>(written: &str, candidates: impl Iterator<Item = &'c str>) -> Option<&'c str> {
    candidates
        .map(|c| (edit_distance(written, c), c))
        .filter(|&(d, c)| d > 0 && d <= written.len().max(c.len()).div_ceil(3))
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = if ca == *cb { prev } else { 1 + prev.min(here).min(row[j]) };
            prev = here;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::{did_you_mean, edit_distance};

    #[test]
    fn suggestions_are_close_names_only() {
        assert_eq!(edit_distance("prodcut", "product"), 2);
        assert_eq!(did_you_mean("prodcut", ["product", "maker"].into_iter()), Some("product"));
        assert_eq!(did_you_mean("hots", ["host"].into_iter()), Some("host"));
        assert_eq!(did_you_mean("owner", ["product", "maker"].into_iter()), None);
    }
}
