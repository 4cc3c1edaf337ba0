//! `check-layers`, inside each crate: the modules of a library crate import one another
//! without a cycle.
//!
//! The nodes are a crate's top-level modules (the `mod` items of its `lib.rs`; a module's
//! submodules count as the module). An edge `a -> b` is a path in `a`'s code that starts
//! `crate::b` (or `super::b` from a top-level file), or `crate::Item` where the crate root
//! re-exports `Item` from `b` (`pub use b::{Item, ..}`). Comments (doc comments and their
//! intra-doc links included), string literals and the unit tests at the end of a file
//! (`#[cfg(test)]` followed by `mod tests`) are not read: documentation may point anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

/// A cycle among a crate's modules.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Cycle {
    pub(crate) krate: String,
    /// The modules of one strongly connected component, sorted.
    pub(crate) modules: Vec<String>,
    /// Each edge within it, with the file that makes it.
    pub(crate) edges: Vec<(String, String, String)>,
}

impl std::fmt::Display for Cycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: modules {} import one another:",
            self.krate,
            self.modules.join(", ")
        )?;
        for (from, to, file) in &self.edges {
            write!(f, " {from} -> {to} ({file});")?;
        }
        Ok(())
    }
}

/// The cycles among the modules of the library crate whose `lib.rs` is `lib`.
pub(crate) fn cycles(krate: &str, lib: &Path) -> Result<Vec<Cycle>> {
    let root = fs::read_to_string(lib).with_context(|| format!("reading {}", lib.display()))?;
    let root_code = code(&root);
    let src = lib.parent().context("lib.rs has a directory")?;
    let modules = top_modules(&root_code);
    let exports = reexports(&root_code, &modules);
    // from -> to -> the first file that makes the edge
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for module in &modules {
        for file in module_files(src, module) {
            let text =
                fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            let top_level = file.parent() == Some(src) || file.ends_with("mod.rs");
            let shown = file
                .strip_prefix(src.parent().unwrap_or(src))
                .unwrap_or(&file)
                .display()
                .to_string();
            for target in references(&code(&text), top_level) {
                let to = if modules.contains(&target) {
                    Some(target)
                } else {
                    exports.get(&target).cloned()
                };
                if let Some(to) = to
                    && &to != module
                {
                    edges
                        .entry(module.clone())
                        .or_default()
                        .entry(to)
                        .or_insert_with(|| shown.clone());
                }
            }
        }
    }
    Ok(components(&modules, &edges)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            let inside: BTreeSet<&String> = component.iter().collect();
            let mut cycle_edges = Vec::new();
            for from in &component {
                for (to, file) in edges.get(from).into_iter().flatten() {
                    if inside.contains(to) {
                        cycle_edges.push((from.clone(), to.clone(), file.clone()));
                    }
                }
            }
            Cycle {
                krate: krate.to_owned(),
                modules: component,
                edges: cycle_edges,
            }
        })
        .collect())
}

/// `text` without comments, string and char literals, and without the unit tests that end a
/// file.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if let Some(inside) = rest.strip_prefix("/*") {
            i += inside.find("*/").map_or(rest.len(), |end| end + 4);
        } else if let Some(inside) = rest.strip_prefix("r#\"") {
            i += inside.find("\"#").map_or(rest.len(), |end| end + 5);
            out.push_str("\"\"");
        } else if rest.starts_with('"') {
            let mut j = 1;
            while j < rest.len() {
                match rest.as_bytes()[j] {
                    b'\\' => j += 2,
                    b'"' => break,
                    _ => j += 1,
                }
            }
            i += (j + 1).min(rest.len());
            out.push_str("\"\"");
        } else if let Some(len) = char_literal(rest) {
            // A char literal (`'"'`, `'\\''`): its quote is not a string's.
            i += len;
            out.push_str("' '");
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The length of the char literal `text` starts with, if it starts with one (not a lifetime).
fn char_literal(text: &str) -> Option<usize> {
    let rest = text.strip_prefix('\'')?;
    if let Some(escaped) = rest.strip_prefix('\\') {
        // `'\n'`, `'\''`, `'\u{..}'`: the literal ends at the first quote after the escaped
        // character.
        let first = escaped.chars().next()?;
        let end = escaped[first.len_utf8()..].find('\'')? + first.len_utf8();
        return Some(2 + end + 1);
    }
    let c = rest.chars().next()?;
    rest[c.len_utf8()..]
        .starts_with('\'')
        .then_some(1 + c.len_utf8() + 1)
}

/// The top-level modules a crate root declares.
fn top_modules(root: &str) -> BTreeSet<String> {
    root.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("pub(crate) mod "))
                .or_else(|| line.strip_prefix("mod "))?;
            let name = rest.strip_suffix(';')?;
            Some(name.trim().to_owned())
        })
        .collect()
}

/// The items the root re-exports, by name, and the module each comes from.
fn reexports(root: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = root;
    while let Some(at) = rest.find("use ") {
        let after = &rest[at + 4..];
        let end = after.find(';').unwrap_or(after.len());
        let item = after[..end].trim();
        rest = &after[end..];
        let item = item.strip_prefix("crate::").unwrap_or(item);
        let Some((module, names)) = item.split_once("::") else {
            continue;
        };
        if !modules.contains(module) {
            continue;
        }
        let names = names.trim();
        let names = names
            .strip_prefix('{')
            .and_then(|n| n.strip_suffix('}'))
            .unwrap_or(names);
        for name in split_top(names) {
            let last = name.rsplit("::").next().unwrap_or(&name).trim();
            let last = last.rsplit(" as ").next().unwrap_or(last).trim();
            if !last.is_empty() && last != "self" {
                out.insert(last.to_owned(), module.to_owned());
            }
        }
    }
    out
}

/// `a, b::{c, d}, e` split at the commas outside braces.
fn split_top(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in list.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut current).trim().to_owned());
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_owned());
    }
    out
}

/// The files of a top-level module: `name.rs` or `name/mod.rs`, and every file under
/// `name/`.
fn module_files(src: &Path, name: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let single = src.join(format!("{name}.rs"));
    if single.is_file() {
        files.push(single);
    }
    let mut dirs = vec![src.join(name)];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The first segment after each `crate::` in `code` (and after `super::` when the file is a
/// top-level module, whose parent is the root), grouped imports included.
fn references(code: &str, top_level: bool) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut prefixes = vec!["crate::"];
    if top_level {
        prefixes.push("super::");
    }
    for prefix in prefixes {
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + prefix.len()..];
            // `$crate::`, `my_crate::` and the like are other paths.
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            if let Some(group) = rest.strip_prefix('{') {
                let end = matching_brace(group);
                for item in split_top(&group[..end]) {
                    if let Some(first) = first_segment(&item) {
                        out.insert(first);
                    }
                }
            } else if let Some(first) = first_segment(rest) {
                out.insert(first);
            }
        }
    }
    out
}

fn first_segment(path: &str) -> Option<String> {
    let name: String = path
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty() && name != "self").then_some(name)
}

/// Where the brace group that `text` is the inside of ends.
fn matching_brace(text: &str) -> usize {
    let mut depth = 1usize;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    text.len()
}

/// Strongly connected components (Tarjan), each sorted.
fn components(
    nodes: &BTreeSet<String>,
    edges: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(walk: &mut Walk<'a>, node: &'a str) {
        let n = walk.index.len();
        walk.index.insert(node, n);
        walk.low.insert(node, n);
        walk.stack.push(node);
        walk.on_stack.insert(node);
        if let Some(targets) = walk.edges.get(node) {
            for to in targets.keys() {
                let to = to.as_str();
                if !walk.index.contains_key(to) {
                    visit(walk, to);
                    let low = walk.low[node].min(walk.low[to]);
                    walk.low.insert(node, low);
                } else if walk.on_stack.contains(to) {
                    let low = walk.low[node].min(walk.index[to]);
                    walk.low.insert(node, low);
                }
            }
        }
        if walk.low[node] == walk.index[node] {
            let mut component = Vec::new();
            while let Some(top) = walk.stack.pop() {
                walk.on_stack.remove(top);
                component.push(top.to_owned());
                if top == node {
                    break;
                }
            }
            component.sort();
            walk.out.push(component);
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for node in nodes {
        if !walk.index.contains_key(node.as_str()) {
            visit(&mut walk, node);
        }
    }
    walk.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crate_with(files: &[(&str, &str)]) -> (tempdir::Dir, PathBuf) {
        let dir = tempdir::Dir::new();
        for (path, text) in files {
            let path = dir.0.join("src").join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        let lib = dir.0.join("src/lib.rs");
        (dir, lib)
    }

    mod tempdir {
        pub(super) struct Dir(pub(super) std::path::PathBuf);

        impl Dir {
            pub(super) fn new() -> Self {
                use std::sync::atomic::{AtomicU32, Ordering};
                static NEXT: AtomicU32 = AtomicU32::new(0);
                let path = std::env::temp_dir().join(format!(
                    "xtask-modules-{}-{}",
                    std::process::id(),
                    NEXT.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&path).unwrap();
                Self(path)
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn a_cycle_through_a_reexport_and_a_grouped_import_is_found() {
        let (_dir, lib) = crate_with(&[
            (
                "lib.rs",
                "mod a;\nmod b;\nmod c;\npub use b::{Bee, other::Thing};\n",
            ),
            ("a.rs", "use crate::{c::See, b};\n"),
            ("b/mod.rs", "mod other;\n"),
            ("b/other.rs", "pub struct Thing(crate::c::See);\n"),
            (
                "c.rs",
                "pub struct See;\nfn f() -> super::Bee { todo!() }\n",
            ),
        ]);
        // a -> b, a -> c, b -> c, c -> b (through the re-exported Bee).
        let found = cycles("k", &lib).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].modules, ["b", "c"]);
        assert_eq!(found[0].edges.len(), 2, "{found:?}");
    }

    #[test]
    fn a_quote_in_a_char_literal_does_not_hide_the_code_after_it() {
        let (_dir, lib) = crate_with(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            (
                "a.rs",
                "const Q: char = '\"';\nconst E: char = '\\'';\nfn f<'x>(_: &'x str) {}\nuse crate::b::X;\n",
            ),
            ("b.rs", "use crate::a::Q;\n"),
        ]);
        let found = cycles("k", &lib).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].modules, ["a", "b"]);
    }

    #[test]
    fn comments_strings_tests_and_other_crates_are_not_edges() {
        let (_dir, lib) = crate_with(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a.rs", "use crate::b::X;\n"),
            (
                "b.rs",
                "/// See [`crate::a`].\n// crate::a\nconst S: &str = \"crate::a\";\nmacro_rules! m { () => { $crate::a::Y } }\nuse other_crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::a::Y;\n}\n",
            ),
        ]);
        assert_eq!(cycles("k", &lib).unwrap(), Vec::new());
    }
}
