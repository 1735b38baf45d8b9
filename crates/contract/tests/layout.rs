//! No import circles between modules (ARCHITECTURE.md: modules import
//! downwards only). Each crate's files are read as modules (`a/b.rs` and
//! `a/b/mod.rs` are `a::b`); a `crate::…` or `super::…` path is an import of
//! the deepest module it names. A module may use its own parents and
//! children; any other circle — between two files, or between two top-level
//! modules through any of their files — fails here, naming the modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The source roots of the workspace's crates (the page's worker binary is
/// its own crate, so `src/bin` is left out of the page's).
const ROOTS: [&str; 4] = ["crates/engine/src", "crates/cli/src", "crates/contract/src", "src"];

type Graph = BTreeMap<String, BTreeSet<String>>;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.ends_with("src/bin") {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `a::b` for `a/b.rs` and `a/b/mod.rs`; "" for the crate root.
fn module_name(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts.join("::")
}

/// The code a module compiles into a build: comments and its test module left out.
fn code(text: &str) -> String {
    let kept: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect();
    let kept = kept.join("\n");
    match kept.find("#[cfg(test)]\nmod tests") {
        Some(at) => kept[..at].to_string(),
        None => kept,
    }
}

/// The identifiers at the start of `text` joined by `::` (`a::b::{` gives a, b).
fn segments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for segment in text.split("::") {
        let ident: String =
            segment.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let whole = ident.len() == segment.len();
        if !ident.is_empty() {
            out.push(ident);
        }
        if !whole || out.is_empty() {
            break;
        }
    }
    out
}

/// Every `prefix…` path in `code`, as its segments after `prefix`; a group
/// (`a::{b, c::D}`) gives one path per item.
fn paths(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        let head = segments(rest);
        let after = rest.get(head.iter().map(|s| s.len() + 2).sum::<usize>()..).unwrap_or("");
        if let Some(list) = after.strip_prefix('{').and_then(|l| l.split('}').next()) {
            for item in list.split(',') {
                out.push(head.iter().cloned().chain(segments(item.trim())).collect());
            }
        }
        out.push(head);
    }
    out
}

fn related(a: &str, b: &str) -> bool {
    a.is_empty()
        || b.is_empty()
        || b.starts_with(&format!("{a}::"))
        || a.starts_with(&format!("{b}::"))
}

/// Who imports whom in one crate, parents and children left out.
fn graph(root: &Path) -> Graph {
    let mut list = Vec::new();
    files(root, &mut list);
    let modules: BTreeMap<String, String> = list
        .iter()
        .map(|f| (module_name(root, f), code(&std::fs::read_to_string(f).unwrap())))
        .collect();
    // The deepest module `segments` names, read from `base`.
    let deepest = |base: &[&str], segments: &[String]| -> Option<String> {
        (1..=segments.len()).rev().find_map(|k| {
            let mut name: Vec<&str> = base.to_vec();
            name.extend(segments[..k].iter().map(String::as_str));
            let name = name.join("::");
            modules.contains_key(&name).then_some(name)
        })
    };
    let mut graph = Graph::new();
    for (name, code) in &modules {
        let parent: Vec<&str> = name.split("::").filter(|s| !s.is_empty()).collect();
        let parent = &parent[..parent.len().saturating_sub(1)];
        let from_crate = paths(code, "crate::").into_iter().filter_map(|p| deepest(&[], &p));
        let from_super = paths(code, "super::").into_iter().filter_map(|p| deepest(parent, &p));
        let uses = from_crate.chain(from_super).filter(|to| !related(name, to)).collect();
        graph.insert(name.clone(), uses);
    }
    graph
}

/// The same graph between top-level modules.
fn top_level(graph: &Graph) -> Graph {
    let top = |m: &str| m.split("::").next().unwrap_or("").to_string();
    let mut out = Graph::new();
    for (from, tos) in graph {
        for to in tos.iter().filter(|to| top(to) != top(from)) {
            out.entry(top(from)).or_default().insert(top(to));
        }
    }
    out
}

/// The sets of modules that reach each other (Tarjan's strongly connected
/// components with more than one member).
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(w: &mut Walk<'g>, v: &'g str) {
        let i = w.index.len();
        w.index.insert(v, i);
        w.low.insert(v, i);
        w.stack.push(v);
        for to in w.graph.get(v).into_iter().flatten() {
            let to = to.as_str();
            if !w.index.contains_key(to) {
                visit(w, to);
                let low = w.low[v].min(w.low[to]);
                w.low.insert(v, low);
            } else if w.stack.contains(&to) {
                let low = w.low[v].min(w.index[to]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let at = w.stack.iter().rposition(|m| *m == v).unwrap();
            let members: Vec<String> = w.stack.drain(at..).map(String::from).collect();
            if members.len() > 1 {
                w.found.push(members);
            }
        }
    }
    let mut w =
        Walk { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: vec![], found: vec![] };
    for v in graph.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.found
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let workspace = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let mut found = Vec::new();
    for root in ROOTS {
        let graph = graph(&workspace.join(root));
        assert!(graph.len() > 5, "{root}: the modules were not read");
        for circle in circles(&graph) {
            found.push(format!("{root}: files {}", circle.join(" → ")));
        }
        for circle in circles(&top_level(&graph)) {
            found.push(format!("{root}: top-level modules {}", circle.join(" → ")));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn a_circle_is_found() {
    let graph: Graph = [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"]), ("d", vec!["a"])]
        .into_iter()
        .map(|(m, to)| (m.to_string(), to.into_iter().map(String::from).collect()))
        .collect();
    let found = circles(&graph);
    assert_eq!(found.len(), 1);
    let mut members = found[0].clone();
    members.sort();
    assert_eq!(members, ["a", "b", "c"]);
    let read = paths("use crate::storage::{format::GROUP, matrix};", "crate::");
    assert_eq!(
        read,
        [vec!["storage", "format", "GROUP"], vec!["storage", "matrix"], vec!["storage"]]
    );
}
