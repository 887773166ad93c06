//! The workspace's source tree as the layout tests read it (ADR 012): where it is, each
//! product crate's source folder, and the Rust files under a folder.

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every product crate's source folder, with a name to report it by: the domain, the adapters,
/// the application crate and every binary in `functions/`.
pub fn crates() -> Vec<(String, PathBuf)> {
    let mut out = vec![
        ("domain".to_string(), root().join("domain/src")),
        ("infra".to_string(), root().join("infra/src")),
    ];
    let functions = root().join("functions");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&functions)
        .unwrap_or_else(|e| panic!("{}: {e}", functions.display()))
        .map(|f| f.expect("a directory entry").path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let src = dir.join("src");
        if src.is_dir() {
            let name = dir.file_name().unwrap_or_default().to_string_lossy();
            out.push((name.to_string(), src));
        }
    }
    out
}

/// The `.rs` files under `dir`, at any depth.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries =
            std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// A test module's file by its name (`foo_tests.rs`, `tests.rs`), not product code.
pub fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    name.ends_with("_tests.rs") || name == "tests.rs"
}

/// A file's product code: every `#[cfg(test)]` item left out — a declared test module
/// (`mod name;`) or a `use` its one line, anything else (an inline `mod tests { … }`, which
/// this code base keeps last in its file) everything from there on. Cutting at the first
/// `#[cfg(test)]` instead would hide all that follows a test module declared at the top.
pub fn product_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        // Other attributes may come between; then the item itself.
        let item = lines.by_ref().map(str::trim).find(|l| !l.starts_with("#["));
        let one_line = item.is_some_and(|l| {
            let l = l.strip_prefix("pub ").unwrap_or(l);
            (l.starts_with("mod ") || l.starts_with("use ")) && l.ends_with(';')
        });
        if !one_line {
            break;
        }
    }
    out
}
