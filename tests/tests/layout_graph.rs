//! The floor plan's import graph, read off the source (ADR 012): within every crate, the
//! modules side by side in one folder (a crate's top rooms; the files of a room) must not
//! import each other in a circle. A module naming its own parent or its children is not an
//! edge (a folder's `mod.rs` holds what its files share); test code is not read.
//!
//! Paths are read as written — `crate::a::b`, `super::x`, and `use` trees with braces — which
//! is how this code base names its modules (no `#[path]`, no glob re-exports between rooms).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use taskledger_tests::source::{crates, product_code, root, rust_files};

/// The module a file holds, as path segments from the crate root.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().to_string())
        .collect();
    let last = parts.pop().unwrap();
    match last.as_str() {
        "mod.rs" | "lib.rs" | "main.rs" => {}
        other => parts.push(other.trim_end_matches(".rs").to_string()),
    }
    parts
}

fn is_module(src: &Path, path: &[String]) -> bool {
    let mut p = src.to_path_buf();
    for s in path {
        p.push(s);
    }
    p.join("mod.rs").is_file() || p.with_extension("rs").is_file()
}

/// The files a crate declares as test modules (`#[cfg(test)] mod name;`), by any name.
fn test_modules(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let dir = match file.file_name().unwrap().to_str().unwrap() {
            "mod.rs" | "lib.rs" | "main.rs" => file.parent().unwrap().to_path_buf(),
            _ => file.with_extension(""),
        };
        let mut lines = text.lines().map(str::trim);
        while let Some(line) = lines.next() {
            if line != "#[cfg(test)]" {
                continue;
            }
            // Other attributes may come between (`#[path = "…"]` names the file itself).
            let mut path = None;
            for next in lines.by_ref() {
                if let Some(p) = next.strip_prefix("#[path = \"") {
                    path = p.strip_suffix("\"]").map(str::to_string);
                    continue;
                }
                if next.starts_with("#[") {
                    continue;
                }
                let name = next
                    .strip_prefix("pub ")
                    .unwrap_or(next)
                    .strip_prefix("mod ")
                    .and_then(|n| n.strip_suffix(';'));
                if let Some(name) = name {
                    match path {
                        Some(p) => out.push(file.parent().unwrap().join(p)),
                        None => {
                            out.push(dir.join(format!("{name}.rs")));
                            out.push(dir.join(name).join("mod.rs"));
                        }
                    }
                }
                break;
            }
        }
    }
    out
}

/// The file's product code: test modules and comments left out.
fn product_text(text: &str) -> String {
    product_code(text)
        .lines()
        .map(|l| {
            // A comment runs to the end of the line; `://` in a URL is not one.
            let mut cut = l.len();
            let b = l.as_bytes();
            for i in 0..b.len().saturating_sub(1) {
                if b[i] == b'/' && b[i + 1] == b'/' && (i == 0 || b[i - 1] != b':') {
                    cut = i;
                    break;
                }
            }
            &l[..cut]
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Reads a path (with `::{…}` groups) at `i`; every full path it names goes to `out`.
fn read_tree(b: &[u8], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut segs = prefix.to_vec();
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < b.len() && b[i] == b'{' {
            i += 1;
            loop {
                while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',') {
                    i += 1;
                }
                if i >= b.len() || b[i] == b'}' {
                    return i + 1;
                }
                let before = i;
                i = read_tree(b, i, &segs, out);
                // `as` renames and anything unexpected: skip to the next item.
                while i < b.len() && b[i] != b',' && b[i] != b'}' {
                    i += 1;
                }
                if i == before {
                    i += 1;
                }
            }
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if start == i {
            out.push(segs);
            return i;
        }
        let seg = String::from_utf8_lossy(&b[start..i]).to_string();
        if seg != "self" || segs.is_empty() {
            segs.push(seg);
        }
        if b[i..].starts_with(b"::") {
            i += 2;
        } else {
            out.push(segs);
            return i;
        }
    }
}

/// Every `crate::…` and `super::…` path in the code (including each path of a `use` tree).
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = (b[i..].starts_with(b"crate::") || b[i..].starts_with(b"super::"))
            && (i == 0 || (!is_ident(b[i - 1]) && b[i - 1] != b'$'));
        if starts && !code[..i].trim_end().ends_with("in") {
            i = read_tree(b, i, &[], &mut out);
        } else {
            i += 1;
        }
    }
    out
}

/// Resolves a written path against the module it is written in (`file_module`; `in_mod_rs`:
/// the file is a folder's `mod.rs`, whose `super` is the folder's parent).
fn resolve(module: &[String], path: &[String]) -> Vec<String> {
    let mut at: Vec<String> = Vec::new();
    let mut rest = path;
    if path.first().is_some_and(|s| s == "crate") {
        rest = &path[1..];
    } else {
        at = module.to_vec();
        while rest.first().is_some_and(|s| s == "super") {
            at.pop();
            rest = &rest[1..];
        }
    }
    at.extend(rest.iter().cloned());
    at
}

/// An edge between two modules of one folder: (crate, folder, from, to) and where it was seen.
type Edges = BTreeMap<(String, Vec<String>), BTreeMap<String, BTreeMap<String, String>>>;

fn edges() -> Edges {
    let mut edges: Edges = BTreeMap::new();
    for (krate, src) in crates() {
        let files = rust_files(&src);
        let tests = test_modules(&files);
        for file in files {
            if tests.contains(&file) {
                continue;
            }
            let module = module_of(&src, &file);
            let text = std::fs::read_to_string(&file).unwrap();
            for path in paths_in(&product_text(&text)) {
                let target = resolve(&module, &path);
                let k = module
                    .iter()
                    .zip(&target)
                    .take_while(|(a, b)| a == b)
                    .count();
                // Its own parent or children: not an edge.
                if k == module.len() || k == target.len() {
                    continue;
                }
                // An item of the shared parent (its `mod.rs`), not a sibling module.
                if !is_module(&src, &target[..=k]) {
                    continue;
                }
                let seen = format!(
                    "{}: {}",
                    file.strip_prefix(root()).unwrap_or(&file).display(),
                    path.join("::")
                );
                edges
                    .entry((krate.clone(), module[..k].to_vec()))
                    .or_default()
                    .entry(module[k].clone())
                    .or_default()
                    .entry(target[k].clone())
                    .or_insert(seen);
            }
        }
    }
    edges
}

/// A circle through `start` in the graph, if there is one (depth first).
fn circle(graph: &BTreeMap<String, BTreeMap<String, String>>, start: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeMap<String, String>>,
        at: &str,
        start: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(at).into_iter().flat_map(|m| m.keys()) {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, next, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_string()];
    let mut seen = BTreeSet::new();
    walk(graph, start, start, &mut path, &mut seen).then_some(path)
}

#[test]
fn no_two_modules_import_each_other_in_a_circle() {
    let edges = edges();
    let total: usize = edges
        .values()
        .map(|g| g.values().map(|m| m.len()).sum::<usize>())
        .sum();
    assert!(total > 100, "the imports were read: {total} edges");
    let mut circles = Vec::new();
    for ((krate, folder), graph) in &edges {
        for start in graph.keys() {
            if let Some(path) = circle(graph, start) {
                // Each circle once: from its smallest module.
                if path.iter().min().map(String::as_str) != Some(start.as_str()) {
                    continue;
                }
                let how: Vec<String> = path
                    .windows(2)
                    .map(|w| graph[&w[0]][&w[1]].clone())
                    .collect();
                circles.push(format!(
                    "{krate}/{}: {} (seen in {})",
                    folder.join("/"),
                    path.join(" → "),
                    how.join("; ")
                ));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "{} circles:\n{}",
        circles.len(),
        circles.join("\n")
    );
}

#[test]
fn the_reader_sees_use_trees_and_relative_paths() {
    let code = "use super::{commands::TaskCommand, head::{TaskHead, X as Y}};\n\
                let x = crate::telemetry::metrics(); pub(in crate::a) fn f() {} $crate::no::x";
    let paths = paths_in(code);
    let shown: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        shown,
        [
            "super::commands::TaskCommand",
            "super::head::TaskHead",
            "super::head::X",
            "crate::telemetry::metrics"
        ]
    );
    let m = ["task".to_string(), "gates".to_string()];
    let r = resolve(&m, &paths[0]);
    assert_eq!(r.join("::"), "task::commands::TaskCommand");
}

#[test]
fn test_code_is_left_out_and_nothing_after_a_declared_test_module_is() {
    let text = "use crate::a;\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\n#[allow(unused)]\npub use crate::b;\nuse crate::c;\n#[cfg(test)]\nmod more {\n    use crate::d;\n}\n";
    let product = product_code(text);
    assert!(
        product.contains("crate::a") && product.contains("crate::c"),
        "{product}"
    );
    assert!(
        !product.contains("crate::b") && !product.contains("crate::d"),
        "{product}"
    );
}
