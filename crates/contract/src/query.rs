//! A query string parsed once into name/value pairs, the way browsers parse
//! `application/x-www-form-urlencoded` (`+` is a space, `%xx` bytes, invalid
//! UTF-8 replaced), so natively and in the page a link means the same.

/// The longest query string read (a link is at most a few KB; a 100 KB value
/// is read, but nothing near a memory problem is).
pub const MAX_QUERY_BYTES: usize = 1 << 20;

/// Name/value pairs in URL order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Query {
    pairs: Vec<(String, String)>,
    /// Set when the string was longer than [`MAX_QUERY_BYTES`] (and cut).
    pub cut: bool,
}

impl Query {
    /// Parses `?a=1&b=2` (the leading `?` is optional).
    pub fn parse(search: &str) -> Query {
        let mut search = search.strip_prefix('?').unwrap_or(search);
        let cut = search.len() > MAX_QUERY_BYTES;
        if cut {
            let mut end = MAX_QUERY_BYTES;
            while !search.is_char_boundary(end) {
                end -= 1;
            }
            search = &search[..end];
        }
        let pairs = form_urlencoded::parse(search.as_bytes()).into_owned().collect();
        Query { pairs, cut }
    }

    /// The value of `name`; the last one when a name is repeated (an
    /// appended `&temperature=2` wins over the link's own).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Names given more than once, each with its count, in URL order.
    pub fn repeated(&self) -> Vec<(&str, usize)> {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for (name, _) in &self.pairs {
            match counts.iter_mut().find(|(n, _)| n == name) {
                Some((_, c)) => *c += 1,
                None => counts.push((name, 1)),
            }
        }
        counts.retain(|&(_, c)| c > 1);
        counts
    }
}

impl Query {
    /// Every parameter name, in URL order (repeated names repeated).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.pairs.iter().map(|(n, _)| n.as_str())
    }
}

impl Query {
    /// A query of these pairs, as if parsed (the quiz builder's form).
    pub fn from_pairs(pairs: Vec<(String, String)>) -> Query {
        Query { pairs, cut: false }
    }
}
