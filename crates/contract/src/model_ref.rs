//! `model=`: which model a page loads. A Hugging Face repository id
//! (`openai-community/gpt2`, optionally `@revision`) or any base address of a
//! model directory (`models/tiny/`, `https://example.edu/gpt2/`), both turned
//! into the address the model's files are fetched under.

/// Where the Hub serves a repository's files.
pub const HUB: &str = "https://huggingface.co";

use crate::controls::echo;

/// The base address (ending in `/`) for a `model=` value, or why it is not one.
///
/// `owner/name` (exactly one `/`, letters, digits, `-`, `_`, `.`, no trailing
/// `/`) with an optional `@revision` is a Hub id: its files are under
/// `https://huggingface.co/owner/name/resolve/REVISION/` (revision `main` by
/// default). Anything else is an address: a path relative to the page or a
/// full `http(s)://` URL, given a trailing `/` when it lacks one.
pub fn model_base(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err("model: empty; give a Hub id such as openai-community/gpt2 or a folder address ending in /".into());
    }
    if let Some((repo, revision)) = hub_id(raw) {
        return Ok(format!("{HUB}/{repo}/resolve/{revision}/"));
    }
    if let Some(scheme) = scheme(raw).filter(|s| !["http", "https"].contains(&s.as_str())) {
        // data: and blob: would be a whole model in the link (or a page's
        // private object); javascript: and the rest are not addresses of files.
        // The scheme is the user's text too: quoted only in part when long.
        let scheme = match scheme.char_indices().nth(16) {
            Some((cut, _)) => format!("{}…", &scheme[..cut]),
            None => scheme,
        };
        return Err(format!(
            "model: {} is a {scheme}: address; a model loads from a Hub id (owner/name) or an http(s) or relative folder address",
            echo(raw)
        ));
    }
    if raw.contains(char::is_whitespace) {
        return Err(format!(
            "model: {} is neither a Hub id (owner/name) nor a folder address",
            echo(raw)
        ));
    }
    Ok(match raw.ends_with('/') {
        true => raw.to_string(),
        false => format!("{raw}/"),
    })
}

/// The URL scheme `raw` starts with, lowercased (`JavaScript:` → `javascript`),
/// if it has one: letters, then letters, digits, `+`, `-` or `.`, then `:`.
pub fn scheme(raw: &str) -> Option<String> {
    let (head, _) = raw.split_once(':')?;
    let mut chars = head.chars();
    let first = chars.next()?;
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    (first.is_ascii_alphabetic() && rest_ok).then(|| head.to_ascii_lowercase())
}

/// `(owner/name, revision)` when `raw` is a Hub repository id.
fn hub_id(raw: &str) -> Option<(&str, &str)> {
    let (repo, revision) = match raw.split_once('@') {
        Some((repo, rev)) => (repo, rev),
        None => (raw, "main"),
    };
    let (owner, name) = repo.split_once('/')?;
    let part = |p: &str| {
        !p.is_empty()
            && !p.starts_with('.')
            && p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    let rev_ok = !revision.is_empty()
        && !revision.contains("..")
        && revision.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    (part(owner) && part(name) && rev_ok).then_some((repo, revision))
}

#[cfg(test)]
mod tests {
    use super::model_base;

    #[test]
    fn hub_ids_and_addresses() {
        let hub = |s: &str| model_base(s).unwrap();
        assert_eq!(
            hub("openai-community/gpt2"),
            "https://huggingface.co/openai-community/gpt2/resolve/main/"
        );
        assert_eq!(
            hub(" distilbert/distilgpt2 "),
            "https://huggingface.co/distilbert/distilgpt2/resolve/main/"
        );
        assert_eq!(
            hub("openai-community/gpt2@refs/pr/1"),
            "https://huggingface.co/openai-community/gpt2/resolve/refs/pr/1/"
        );
        // Addresses: trailing slash, more than one part, a scheme, a leading ./
        assert_eq!(hub("models/shakespeare/"), "models/shakespeare/");
        assert_eq!(hub("broken/llama/"), "broken/llama/");
        assert_eq!(hub("./models/tiny"), "./models/tiny/");
        assert_eq!(hub("a/b/c"), "a/b/c/");
        assert_eq!(hub("https://example.edu/gpt2"), "https://example.edu/gpt2/");
        assert_eq!(hub("models"), "models/");
        for bad in ["", "  ", "a b/c", "javascript:alert(1)", "data:text/plain,x"] {
            assert!(model_base(bad).is_err(), "{bad:?}");
        }
        // Schemes in any case; data: and blob: named in the notice.
        for bad in [
            "JavaScript:alert(1)",
            "JAVASCRIPT:x",
            " javascript:x",
            "vbscript:x",
            "file:///etc/",
            "blob:https://x/y",
            "DATA:text/plain,x",
        ] {
            let why = model_base(bad).expect_err(bad);
            let scheme = bad.trim().split(':').next().unwrap().to_ascii_lowercase();
            assert!(why.contains(&format!("a {scheme}: address")), "{bad:?}: {why}");
        }
        assert_eq!(hub("HTTPS://example.edu/gpt2/"), "HTTPS://example.edu/gpt2/");
        assert_eq!(hub("models/a:b"), "models/a:b/", "a colon after a slash is not a scheme");
        // A long value is not echoed whole.
        let long = format!("data:{}", "x".repeat(100_000));
        assert!(model_base(&long).unwrap_err().chars().count() < 400);
        // A long scheme too (the URL fuzz target found it).
        let long_scheme = format!("controls{}:x", "L".repeat(300));
        assert!(model_base(&long_scheme).unwrap_err().chars().count() < 400);
        assert!(model_base("owner/..@x").unwrap().ends_with('/'), "not a Hub id: an address");
    }
}
