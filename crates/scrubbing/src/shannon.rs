//! Shannon entropy of a text: a leaf the entropy scan, the rules' entropy floors and
//! the labelled values' mask check all measure by.

/// Shannon entropy of `text` in bits per byte.
///
/// ```
/// use oxydra_scrubbing::shannon_entropy;
///
/// assert_eq!(shannon_entropy("aaaa"), 0.0);
/// assert_eq!(shannon_entropy("abab"), 1.0);
/// assert!(shannon_entropy("x9Qm2LpV7rTz") > 3.5);
/// ```
pub fn shannon_entropy(text: &str) -> f64 {
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        if let Some(count) = counts.get_mut(usize::from(b)) {
            *count += 1;
        }
    }
    let total = bytes.len() as f64;
    counts
        .iter()
        .filter(|c| **c > 0)
        .map(|&c| {
            let p = f64::from(c) / total;
            -p * p.log2()
        })
        .sum()
}
