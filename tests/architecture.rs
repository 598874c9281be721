//! The pipeline's shape (style.md, issue 18), checked over the source text of `src/`:
//!
//! - no import circles: no two modules use each other, directly or round a ring, and no two
//!   stage folders (`wire`, `source`, `router`, `model`, `ui`, `export`, `commands`, and the files
//!   at the top) either;
//! - no agent or format named downstream of `wire`: `router/`, `model/`, `ui/`, `export/`,
//!   `commands/`, `pipeline.rs` and `feed.rs` say neither Codex, Claude Code nor OpenCode (nor
//!   their providers), nor an agent's tool names. What is agent-specific lives in `wire/` (each
//!   format lowered once into one vocabulary) and in the agent registry of `source/`.
//!
//! What each test finds beyond the known cases of [`KNOWN_CIRCLES`] and [`KNOWN_NAMES`] fails it;
//! so does a known case that is gone (the list only shrinks: take it out).
//!
//! How the text is read: comments and `#[cfg(test)]` items are left out (tests may name anything).
//! A module is a file (`mod.rs` is its folder's). It uses another when it names a path into it —
//! in a `use` or inline, from `crate::`, `super::`, `self::`, a child module, or a name a `use`
//! brought in — resolved through re-exports (`pub use`) to the module that defines the item. A
//! folder's module re-exporting its own children is a facade, not a use of them, unless it uses
//! what it re-exports itself.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Import circles found elsewhere when this test was written, by their modules (sorted, joined by
/// ` <-> `); each owner shrinks the list to nothing. `wire` has none and must keep it so.
const KNOWN_CIRCLES: &[&str] = &[];

/// Files downstream of `wire` that name an agent or a format, and how many times, when this test
/// was written: what the agent registry (issue 18) takes over. Each owner shrinks the list.
const KNOWN_NAMES: &[(&str, usize)] = &[("ui/machine.rs", 2), ("ui/text.rs", 3)];

/// Folders and files downstream of `wire`, where no agent or format is named.
const DOWNSTREAM: &[&str] =
    &["router", "model", "ui", "export", "store", "serve", "act", "commands", "pipeline.rs", "feed.rs"];

/// What names an agent or a format, compared without case within identifiers and strings: the
/// agents, and the companies whose models and APIs only one of them uses.
const AGENT_WORDS: &[&str] = &["codex", "claude", "opencode", "anthropic", "openai"];

/// An agent's own names for its calls, compared exactly: the tools that manage agents, in every
/// spelling an agent uses, and the item types that carry them.
const TOOL_WORDS: &[&str] = &[
    "spawnAgent",
    "spawn_agent",
    "sendInput",
    "send_input",
    "send_message",
    "followup_task",
    "wait_agent",
    "closeAgent",
    "close_agent",
    "resumeAgent",
    "resume_agent",
    "interrupt_agent",
    "list_agents",
    "collabAgentToolCall",
    "subAgentActivity",
    "\"Agent\"",
    "\"Task\"",
    "\"task\"",
    "\"wait\"",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// One source file as a module.
struct Module {
    /// `wire::claude::stream`; the crate root is empty.
    path: Vec<String>,
    /// Its file, relative to `src/`.
    file: String,
    /// The text without comments and test items; string literals kept.
    code: String,
    /// The same with every string and char literal blanked.
    bare: String,
}

impl Module {
    fn name(&self) -> String {
        module_name(&self.path)
    }
}

/// A module's name by its path: `wire::claude`; the crate root's is `crate`.
fn module_name(path: &[String]) -> String {
    if path.is_empty() { "crate".to_owned() } else { path.join("::") }
}

fn modules() -> Vec<Module> {
    let mut files = Vec::new();
    collect(&src(), &mut files);
    files.sort();
    files
        .into_iter()
        .filter_map(|file| {
            let rel = file.strip_prefix(src()).expect("under src").to_string_lossy().replace('\\', "/");
            // The binary is a crate of its own, on top of the library.
            if rel == "main.rs" {
                return None;
            }
            let mut path: Vec<String> = rel.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
            if path.last().is_some_and(|l| l == "mod" || l == "lib") {
                path.pop();
            }
            let text = std::fs::read_to_string(&file).expect("source file");
            let code = strip(&without_tests(&text), false);
            let bare = strip(&without_tests(&text), true);
            Some(Module { path, file: rel, code, bare })
        })
        .collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source folder") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text without its `#[cfg(test)]` items, as rustfmt lays them out: the item after the
/// attribute ends at its first line ending in `;`, or at the line that closes it at its indent.
fn without_tests(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "#[cfg(test)]" {
            out.push_str(lines[i]);
            out.push('\n');
            i += 1;
            continue;
        }
        let indent = lines[i].len() - lines[i].trim_start().len();
        i += 1;
        // Further attributes of the same item.
        while i < lines.len() && lines[i].trim_start().starts_with("#[") {
            i += 1;
        }
        if i < lines.len() && lines[i].trim_end().ends_with(';') {
            i += 1;
            continue;
        }
        let close = format!("{}}}", " ".repeat(indent));
        while i < lines.len() && lines[i].trim_end() != close {
            i += 1;
        }
        i += 1;
    }
    out
}

/// The text without comments; with `blank`, string and char literals are spaces too.
fn strip(text: &str, blank: bool) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if rest.starts_with(b"/*") {
            let end = text[i + 2..].find("*/").map_or(b.len(), |k| i + 2 + k + 2);
            out.extend(b[i..end].iter().map(|&c| if c == b'\n' { c } else { b' ' }));
            i = end;
        } else if let Some(end) = literal_end(b, i) {
            if blank {
                out.extend(b[i..end].iter().map(|&c| if c == b'\n' { c } else { b' ' }));
            } else {
                out.extend_from_slice(&b[i..end]);
            }
            i = end;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("UTF-8 kept")
}

/// Where the string or char literal starting at `i` ends, if one does (`"…"`, `r#"…"#`, `b"…"`,
/// `'c'`; a lifetime is none).
fn literal_end(b: &[u8], i: usize) -> Option<usize> {
    let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    let mut j = i;
    if !ident_before && b[j] == b'b' {
        j += 1;
    }
    if !ident_before && b.get(j) == Some(&b'r') && matches!(b.get(j + 1), Some(b'"' | b'#')) {
        let hashes = b[j + 1..].iter().take_while(|&&c| c == b'#').count();
        let open = j + 1 + hashes;
        if b.get(open) != Some(&b'"') {
            return None;
        }
        let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
        let end = b[open + 1..].windows(close.len()).position(|w| w == close.as_slice())?;
        return Some(open + 1 + end + close.len());
    }
    match b.get(j)? {
        b'"' if j == i || !ident_before => {
            let mut k = j + 1;
            while k < b.len() && b[k] != b'"' {
                k += if b[k] == b'\\' { 2 } else { 1 };
            }
            Some(k + 1)
        }
        b'\'' => {
            // `'\n'`, `'x'`, `'é'`; a lifetime (`'a`) has no closing quote right after one char.
            if b.get(j + 1) == Some(&b'\\') {
                let close = b[j + 2..].iter().position(|&c| c == b'\'')?;
                return Some(j + 2 + close + 1);
            }
            let ch = std::str::from_utf8(&b[j + 1..]).ok()?.chars().next()?;
            let after = j + 1 + ch.len_utf8();
            (b.get(after) == Some(&b'\'')).then_some(after + 1)
        }
        _ => None,
    }
}

/// A path a module names, and the name it brings into scope (for a `use`).
struct Named {
    path: Vec<String>,
    /// What a `use` calls it in the module (its last segment, or its `as` name).
    alias: Option<String>,
    /// From a `pub use` (or `pub(…) use`): a re-export.
    public: bool,
}

/// Identifiers and punctuation: what a use tree is made of.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if !(d.is_alphanumeric() || d == '_') {
                    break;
                }
                end = j + d.len_utf8();
                chars.next();
            }
            out.push(text[i..end].to_owned());
        } else if c == ':' && chars.peek().is_some_and(|&(_, d)| d == ':') {
            chars.next();
            out.push("::".to_owned());
        } else if !c.is_whitespace() {
            out.push(c.to_string());
        }
    }
    out
}

/// The `use` statements of a module, flattened into the paths they name.
fn uses(bare: &str) -> Vec<Named> {
    let t = tokens(bare);
    let mut out = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let statement = i == 0 || matches!(t[i - 1].as_str(), ";" | "{" | "}" | "]" | "pub" | ")");
        if t[i] != "use" || !statement {
            i += 1;
            continue;
        }
        let public = t[..i].last().is_some_and(|p| p == "pub")
            || t[..i].last().is_some_and(|p| p == ")") && t[..i].iter().rev().take(4).any(|p| p == "pub");
        let end = t[i..].iter().position(|x| x == ";").map_or(t.len(), |k| i + k);
        let mut at = i + 1;
        tree(&t[..end], &mut at, &mut Vec::new(), &mut |path, alias| out.push(Named { path, alias, public }));
        i = end;
    }
    out
}

/// One use tree at `at`: `a::b`, `a::b as c`, `a::{…}`, `a::*`.
fn tree(t: &[String], at: &mut usize, prefix: &mut Vec<String>, emit: &mut impl FnMut(Vec<String>, Option<String>)) {
    let n = prefix.len();
    loop {
        match t.get(*at).map(String::as_str) {
            Some("{") => {
                *at += 1;
                while t.get(*at).is_some_and(|x| x != "}") {
                    tree(t, at, prefix, emit);
                    if t.get(*at).is_some_and(|x| x == ",") {
                        *at += 1;
                    }
                }
                *at += 1;
                break;
            }
            Some("*") => {
                *at += 1;
                emit(prefix.clone(), None);
                break;
            }
            Some(word) if word != "}" && word != "," => {
                prefix.push(word.to_owned());
                *at += 1;
                if t.get(*at).is_some_and(|x| x == "::") {
                    *at += 1;
                    continue;
                }
                let alias = if t.get(*at).is_some_and(|x| x == "as") {
                    *at += 2;
                    t.get(*at - 1).cloned()
                } else {
                    None
                };
                let mut path = prefix.clone();
                if path.last().is_some_and(|l| l == "self") {
                    path.pop();
                }
                let name = alias.or_else(|| path.last().cloned());
                emit(path, name);
                break;
            }
            _ => break,
        }
    }
    prefix.truncate(n);
}

/// Paths named inline, outside `use` statements: from `crate::`, `super::`, `self::`, or a name
/// in `scope` (a child module, or what a `use` brought in).
fn inline_paths(bare: &str, scope: &BTreeMap<String, Vec<String>>) -> Vec<Vec<String>> {
    let t = tokens(bare);
    let mut out = Vec::new();
    let mut i = 0;
    while i + 2 < t.len() {
        let head = &t[i];
        let starts = matches!(head.as_str(), "crate" | "super" | "self") || scope.contains_key(head);
        let follows_path = i > 0 && t[i - 1] == "::";
        if !starts || follows_path || t[i + 1] != "::" {
            i += 1;
            continue;
        }
        let mut path = vec![head.clone()];
        let mut j = i + 1;
        while j + 1 < t.len() && t[j] == "::" && t[j + 1].chars().all(|c| c.is_alphanumeric() || c == '_') {
            path.push(t[j + 1].clone());
            j += 2;
        }
        out.push(path);
        i = j;
    }
    out
}

/// The crate's modules and what each uses, as module paths joined by `::`.
struct Graph {
    modules: BTreeSet<String>,
    edges: BTreeMap<String, BTreeSet<String>>,
}

/// A path as written in `module`, made absolute; `None` for another crate's.
fn absolute(module: &[String], path: &[String], children: &BTreeSet<String>) -> Option<Vec<String>> {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = path;
    match rest.first()?.as_str() {
        "crate" => {
            base.clear();
            rest = &rest[1..];
        }
        "self" => rest = &rest[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        first => {
            let mut child = module.to_vec();
            child.push(first.to_owned());
            if !children.contains(&child.join("::")) {
                return None;
            }
        }
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

impl Graph {
    fn of(modules: &[Module]) -> Self {
        let names: BTreeSet<String> = modules.iter().map(Module::name).collect();
        // What each module re-exports: name → the absolute path it re-exports.
        let mut exports: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        let mut used: Vec<(String, Vec<Vec<String>>)> = Vec::new();
        for m in modules {
            let mut scope = BTreeMap::new();
            let mut paths = Vec::new();
            let rest = without_uses(&m.bare);
            let words: BTreeSet<String> = tokens(&rest).into_iter().collect();
            for named in uses(&m.bare) {
                let Some(abs) = absolute(&m.path, &named.path, &names) else { continue };
                if let Some(alias) = &named.alias {
                    scope.insert(alias.clone(), abs.clone());
                }
                let facade = named.public && abs.len() > m.path.len() && abs.starts_with(&m.path);
                if named.public {
                    if let Some(alias) = &named.alias {
                        exports.entry(m.name()).or_default().insert(alias.clone(), abs.clone());
                    }
                }
                // A folder re-exporting its children is their facade, not their user; unless it
                // uses what it re-exports itself.
                let used_here = named.alias.as_ref().is_some_and(|a| words.contains(a));
                if !facade || used_here {
                    paths.push(abs);
                }
            }
            for path in inline_paths(&rest, &scope) {
                let abs = match scope.get(&path[0]) {
                    Some(base) => base.iter().cloned().chain(path[1..].iter().cloned()).collect(),
                    None => match absolute(&m.path, &path, &names) {
                        Some(abs) => abs,
                        None => continue,
                    },
                };
                paths.push(abs);
            }
            used.push((m.name(), paths));
        }
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, paths) in used {
            for path in paths {
                if let Some(to) = resolve(&path, &names, &exports, 0) {
                    if to != from {
                        edges.entry(from.clone()).or_default().insert(to);
                    }
                }
            }
        }
        Self { modules: names, edges }
    }

    /// The same graph between stage folders (`wire`, `source`, …; a file at the top is its own).
    fn folders(&self) -> Self {
        let folder = |m: &str| m.split("::").next().unwrap_or("crate").to_owned();
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, tos) in &self.edges {
            for to in tos {
                if folder(from) != folder(to) {
                    edges.entry(folder(from)).or_default().insert(folder(to));
                }
            }
        }
        Self { modules: self.modules.iter().map(|m| folder(m)).collect(), edges }
    }

    /// Every ring of modules that use one another (strongly connected, more than one), each as
    /// its sorted modules joined by ` <-> `.
    fn circles(&self) -> BTreeSet<String> {
        let mut tarjan = Tarjan::default();
        for m in &self.modules {
            if !tarjan.index.contains_key(m) {
                tarjan.visit(m, &self.edges);
            }
        }
        tarjan.rings
    }
}

/// The module that defines what `path` names: the longest prefix that is a module, then through
/// that module's re-export of the next name, if it has one.
fn resolve(
    path: &[String],
    modules: &BTreeSet<String>,
    exports: &BTreeMap<String, BTreeMap<String, Vec<String>>>,
    depth: usize,
) -> Option<String> {
    let len = (0..=path.len()).rev().find(|&n| modules.contains(&module_name(&path[..n])))?;
    let module = module_name(&path[..len]);
    let target = path.get(len).and_then(|name| exports.get(&module)?.get(name));
    match target {
        Some(target) if depth < 8 && target.as_slice() != path => {
            let mut next = target.clone();
            next.extend(path[len + 1..].iter().cloned());
            resolve(&next, modules, exports, depth + 1).or(Some(module))
        }
        _ => Some(module),
    }
}

/// The text outside `use` statements and `mod` declarations.
fn without_uses(bare: &str) -> String {
    let mut out = String::with_capacity(bare.len());
    for statement in bare.split_inclusive(';') {
        let words: Vec<&str> = statement.split_whitespace().collect();
        if let [.., "mod", _] | [.., "mod", _, ";"] = words.as_slice() {
            if statement.trim_end().ends_with(';') && !statement.contains('{') {
                let k = statement.rfind("mod").unwrap_or(0);
                out.push_str(&statement[..k]);
                continue;
            }
        }
        match statement.rfind("use ") {
            Some(k)
                if statement[..k].trim_end().is_empty()
                    || statement[..k].trim_end().ends_with(['}', '{', ']', ';'])
                    || statement[..k].trim_end().ends_with("pub")
                    || statement[..k].trim_end().ends_with(')') =>
            {
                out.push_str(&statement[..k]);
            }
            _ => out.push_str(statement),
        }
    }
    out
}

/// Tarjan's strongly connected components.
#[derive(Default)]
struct Tarjan {
    next: usize,
    index: BTreeMap<String, usize>,
    low: BTreeMap<String, usize>,
    stack: Vec<String>,
    on_stack: BTreeSet<String>,
    rings: BTreeSet<String>,
}

impl Tarjan {
    fn visit(&mut self, v: &str, edges: &BTreeMap<String, BTreeSet<String>>) {
        self.index.insert(v.to_owned(), self.next);
        self.low.insert(v.to_owned(), self.next);
        self.next += 1;
        self.stack.push(v.to_owned());
        self.on_stack.insert(v.to_owned());
        for w in edges.get(v).into_iter().flatten() {
            if !self.index.contains_key(w) {
                self.visit(w, edges);
                let low = self.low[v].min(self.low[w]);
                self.low.insert(v.to_owned(), low);
            } else if self.on_stack.contains(w) {
                let low = self.low[v].min(self.index[w]);
                self.low.insert(v.to_owned(), low);
            }
        }
        if self.low[v] == self.index[v] {
            let mut ring = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack.remove(&w);
                let done = w == v;
                ring.push(w);
                if done {
                    break;
                }
            }
            if ring.len() > 1 {
                ring.sort();
                self.rings.insert(ring.join(" <-> "));
            }
        }
    }
}

/// What was found against what is known: new cases, and known ones that are gone.
fn compare(found: &BTreeSet<String>, known: &[&str]) -> (Vec<String>, Vec<String>) {
    let known: BTreeSet<String> = known.iter().map(|k| (*k).to_owned()).collect();
    (found.difference(&known).cloned().collect(), known.difference(found).cloned().collect())
}

#[test]
fn no_module_or_folder_imports_one_that_imports_it() {
    let modules = modules();
    let graph = Graph::of(&modules);
    let mut found = graph.circles();
    found.extend(graph.folders().circles().into_iter().map(|r| format!("folders: {r}")));
    let (new, gone) = compare(&found, KNOWN_CIRCLES);
    assert!(
        new.is_empty() && gone.is_empty(),
        "import circles not known: {new:#?}\nknown circles that are gone (take them out of KNOWN_CIRCLES): {gone:#?}\nevery module's uses: {:#?}",
        graph.edges
    );
}

/// The agent and format names in one file's code, a line each.
fn names_in(code: &str) -> Vec<String> {
    let mut hits = Vec::new();
    for line in code.lines() {
        let lower = line.to_lowercase();
        let agents = AGENT_WORDS.iter().map(|w| lower.matches(w).count()).sum::<usize>();
        let tools = TOOL_WORDS.iter().map(|w| line.matches(w).count()).sum::<usize>();
        for _ in 0..agents + tools {
            hits.push(line.trim().to_owned());
        }
    }
    hits
}

#[test]
fn no_agent_or_format_is_named_downstream_of_wire() {
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in modules() {
        let downstream = DOWNSTREAM.iter().any(|d| m.file == *d || m.file.starts_with(&format!("{d}/")));
        let hits = names_in(&m.code);
        if downstream && !hits.is_empty() {
            found.insert(m.file, hits);
        }
    }
    let known: BTreeMap<&str, usize> = KNOWN_NAMES.iter().copied().collect();
    let mut wrong = Vec::new();
    for (file, hits) in &found {
        match known.get(file.as_str()) {
            Some(&n) if n == hits.len() => {}
            Some(&n) => wrong.push(format!("{file}: {} names, {n} known:\n  {}", hits.len(), hits.join("\n  "))),
            None => wrong.push(format!("{file}: {} names:\n  {}", hits.len(), hits.join("\n  "))),
        }
    }
    for file in known.keys().filter(|f| !found.contains_key(**f)) {
        wrong.push(format!("{file}: names none any more (take it out of KNOWN_NAMES)"));
    }
    assert!(wrong.is_empty(), "agents or formats named downstream of wire:\n{}", wrong.join("\n"));
}

/// A module of the given path and text, for the tests of this test.
fn module(path: &str, text: &str) -> Module {
    let path: Vec<String> = path.split("::").filter(|s| !s.is_empty()).map(str::to_owned).collect();
    Module { file: format!("{}.rs", path.join("/")), code: strip(text, false), bare: strip(text, true), path }
}

#[test]
fn circles_are_found_through_uses_and_not_through_facades() {
    let crate_root = module("", "pub mod a; pub mod b;");
    let a = module("a", "mod x; pub use x::Thing; pub use crate::b::Other;");
    let x = module("a::x", "use crate::b::helper; pub struct Thing;");
    let b = module("b", "pub struct Other; pub fn helper() { crate::a::Thing::go(); }");
    // `a` re-exports its child `x` (a facade) and `b`'s `Other` (a use of `b`); `x` uses `b`,
    // and `b` names `a::Thing`, which is `x`'s: `x` and `b` use each other, `a` is no part of it.
    let graph = Graph::of(&[crate_root, a, x, b]);
    assert_eq!(graph.circles().into_iter().collect::<Vec<_>>(), ["a::x <-> b"]);
    assert_eq!(graph.folders().circles().into_iter().collect::<Vec<_>>(), ["a <-> b"]);
}

#[test]
fn the_reader_of_this_test_reads_what_it_should() {
    let text = "use a::b; // crate::x\nfn f() { let s = \"crate::y\"; super::z::w(); }\n#[cfg(test)]\nmod tests {\n    use crate::q;\n}\n";
    let bare = strip(&without_tests(text), true);
    assert!(!bare.contains("crate::x") && !bare.contains("crate::y") && !bare.contains("crate::q"), "{bare}");
    assert!(bare.contains("super::z::w"));
    let t = "pub use self::x::{A, b::{C as D, self}, e::*};";
    let named: Vec<(String, Option<String>, bool)> =
        uses(t).into_iter().map(|n| (n.path.join("::"), n.alias, n.public)).collect();
    assert_eq!(
        named,
        [
            ("self::x::A".to_owned(), Some("A".to_owned()), true),
            ("self::x::b::C".to_owned(), Some("D".to_owned()), true),
            ("self::x::b".to_owned(), Some("b".to_owned()), true),
            ("self::x::e".to_owned(), None, true),
        ]
    );
    assert_eq!(strip("let c = '\"'; let l: &'a str = \"x\";", true), "let c =    ; let l: &'a str =    ;");
}
