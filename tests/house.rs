//! The house rules, checked by reading the sources of the runtime and the
//! macros: no file over 600 lines, no function over 80 lines, and no import
//! cycle between files. A cycle is found on the graph of `use` and inline
//! paths (`crate::`, `self::`, `super::` and the file's own child modules),
//! each resolved to the file that defines the module it names.
//!
//! Functions are measured from their signature to their closing brace
//! (attributes and doc comments excluded), with syn's span locations.
//!
//! The macros name types from the syntax tree, never by printing tokens
//! and patching the text: what `TokenStream`'s `Display` puts between
//! tokens is not a promise, and a name patched with `.replace(' ', "")`
//! is wrong as soon as a type has a space of its own (`&'a mut T`, `dyn A + B`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 80;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read source dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under `root` (`denormalize/fanout.rs` ->
/// `["denormalize", "fanout"]`, `lib.rs` -> `[]`).
fn module_of(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).expect("under root");
    let mut parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if !(stem == "mod" || (parts.is_empty() && (stem == "lib" || stem == "main"))) {
        parts.push(stem.to_owned());
    }
    parts
}

struct Sources {
    root: PathBuf,
    files: Vec<PathBuf>,
    /// Module path -> file.
    modules: BTreeMap<Vec<String>, PathBuf>,
}

impl Sources {
    fn read(root: PathBuf) -> Sources {
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        files.sort();
        assert!(files.len() > 10, "found only {} files under {}", files.len(), root.display());
        let modules = files.iter().map(|f| (module_of(&root, f), f.clone())).collect();
        Sources { root, files, modules }
    }

    fn name(&self, file: &Path) -> String {
        file.strip_prefix(&self.root).expect("under root").display().to_string()
    }

    /// The file defining the longest module prefix of an absolute path.
    fn resolve(&self, path: &[String]) -> Option<&PathBuf> {
        (0..=path.len()).rev().find_map(|n| self.modules.get(&path[..n]))
    }
}

/// Collects the functions' lengths and the module paths a file names.
struct Reader<'a> {
    /// The file's module path, extended inside inline modules.
    module: Vec<String>,
    /// Child modules declared in the scope being read (`mod x;`/`mod x {}`).
    children: Vec<BTreeSet<String>>,
    paths: Vec<Vec<String>>,
    long_fns: Vec<(String, usize, usize)>,
    file: &'a str,
}

impl Reader<'_> {
    /// An absolute module path for `segments`, or None when it does not
    /// start at the crate, this module or a child of it.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let mut base = self.module.clone();
        let mut rest = segments;
        match first.as_str() {
            "crate" => {
                base.clear();
                rest = &segments[1..];
            }
            "self" => rest = &segments[1..],
            "super" => {
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            name if self.children.last().is_some_and(|c| c.contains(name)) => {}
            _ => return None,
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn push(&mut self, segments: Vec<String>) {
        if let Some(abs) = self.absolute(&segments) {
            self.paths.push(abs);
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                if n.ident != "self" {
                    full.push(n.ident.to_string());
                }
                self.push(full);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                full.push(r.ident.to_string());
                self.push(full);
            }
            syn::UseTree::Glob(_) => self.push(prefix.clone()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(prefix, t)),
        }
    }

    fn measure(&mut self, name: &syn::Ident, sig_start: proc_macro2::Span, end: proc_macro2::Span) {
        let (start, end) = (sig_start.start().line, end.end().line);
        let lines = end + 1 - start;
        if lines > MAX_FN_LINES {
            self.long_fns.push((format!("{}:{start} fn {name}", self.file), lines, start));
        }
    }

    fn declared_children(items: &[syn::Item]) -> BTreeSet<String> {
        items
            .iter()
            .filter_map(|i| match i {
                syn::Item::Mod(m) => Some(m.ident.to_string()),
                _ => None,
            })
            .collect()
    }
}

/// The span where an item's signature starts: its visibility, or the
/// `fn`-side keywords when it has none (attributes are not counted).
fn sig_start(vis: Option<&syn::Visibility>, sig: &syn::Signature) -> proc_macro2::Span {
    use syn::spanned::Spanned;
    match vis {
        Some(syn::Visibility::Inherited) | None => sig.span(),
        Some(v) => v.span(),
    }
}

impl<'ast> Visit<'ast> for Reader<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if let Some((_, items)) = &m.content {
            self.module.push(m.ident.to_string());
            self.children.push(Reader::declared_children(items));
            syn::visit::visit_item_mod(self, m);
            self.children.pop();
            self.module.pop();
        }
    }

    // `pub(crate)`, `pub(super)`: a scope, not an import.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.push(segments);
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // Paths inside macro bodies (`doc!`, `in_session!`, `quote!`) are
        // read from their tokens: `crate :: a :: b` sequences.
        let tokens: Vec<proc_macro2::TokenTree> = m.tokens.clone().into_iter().collect();
        self.macro_tokens(&tokens);
        syn::visit::visit_macro(self, m);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        use syn::spanned::Spanned;
        self.measure(&f.sig.ident, sig_start(Some(&f.vis), &f.sig), f.block.span());
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        use syn::spanned::Spanned;
        self.measure(&f.sig.ident, sig_start(Some(&f.vis), &f.sig), f.block.span());
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        use syn::spanned::Spanned;
        if let Some(block) = &f.default {
            self.measure(&f.sig.ident, sig_start(None, &f.sig), block.span());
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

impl Reader<'_> {
    fn macro_tokens(&mut self, tokens: &[proc_macro2::TokenTree]) {
        use proc_macro2::TokenTree;
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Group(g) => {
                    let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                    self.macro_tokens(&inner);
                    i += 1;
                }
                // `pub(in crate::x)` names a scope, not an import.
                TokenTree::Ident(_) if i > 0 && matches!(&tokens[i - 1], TokenTree::Ident(p) if p == "in") => i += 1,
                TokenTree::Ident(id) if matches!(id.to_string().as_str(), "crate" | "self" | "super") => {
                    let mut segments = vec![id.to_string()];
                    let mut j = i + 1;
                    while j + 2 < tokens.len() + 1 {
                        let colons = matches!((&tokens.get(j), &tokens.get(j + 1)),
                            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':');
                        match (colons, tokens.get(j + 2)) {
                            (true, Some(TokenTree::Ident(next))) => {
                                segments.push(next.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    // A lone `self` is a receiver, a lone `crate` a visibility.
                    if segments.len() > 1 {
                        self.push(segments);
                    }
                    i = j;
                }
                _ => i += 1,
            }
        }
    }
}

struct Report {
    long_files: Vec<String>,
    long_fns: Vec<String>,
    cycles: Vec<String>,
    /// How many file-to-file imports were found.
    edges: usize,
}

fn read_crate(root: PathBuf) -> Report {
    let sources = Sources::read(root);
    let mut long_files = Vec::new();
    let mut long_fns = Vec::new();
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for file in &sources.files {
        let text = std::fs::read_to_string(file).expect("read source");
        let name = sources.name(file);
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES {
            long_files.push(format!("{name}: {lines} lines"));
        }
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
        let mut reader = Reader {
            module: module_of(&sources.root, file),
            children: vec![Reader::declared_children(&ast.items)],
            paths: Vec::new(),
            long_fns: Vec::new(),
            file: &name,
        };
        reader.visit_file(&ast);
        long_fns.extend(reader.long_fns.iter().map(|(f, n, _)| format!("{f}: {n} lines")));
        let targets = edges.entry(file.clone()).or_default();
        for path in &reader.paths {
            if let Some(to) = sources.resolve(path) {
                if std::env::var("HOUSE_DEBUG").is_ok_and(|d| name.contains(&d)) {
                    eprintln!("{name}: {} -> {}", path.join("::"), sources.name(to));
                }
                if to != file {
                    targets.insert(to.clone());
                }
            }
        }
    }
    let names = |files: &[PathBuf]| files.iter().map(|f| sources.name(f)).collect::<Vec<_>>();
    let cycles = cycles(&edges)
        .into_iter()
        .map(|(cycle, rest)| match rest.is_empty() {
            true => names(&cycle).join(" -> "),
            false => format!("{} (its component also holds {})", names(&cycle).join(" -> "), names(&rest).join(", ")),
        })
        .collect();
    let edge_count = edges.values().map(BTreeSet::len).sum();
    Report { long_files, long_fns, cycles, edges: edge_count }
}

/// Strongly connected components of more than one file (Tarjan), each
/// given as one cycle through its first file, then the rest of its files.
fn cycles(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<(Vec<PathBuf>, Vec<PathBuf>)> {
    let nodes: Vec<&PathBuf> = edges.keys().collect();
    let index_of: BTreeMap<&PathBuf, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let succ: Vec<Vec<usize>> =
        nodes.iter().map(|n| edges[*n].iter().filter_map(|t| index_of.get(t).copied()).collect()).collect();
    let mut out = Vec::new();
    for component in tarjan(&succ) {
        if component.len() > 1 {
            let cycle = one_cycle(&succ, &component);
            let mut rest: Vec<usize> = component.iter().filter(|i| !cycle.contains(i)).copied().collect();
            rest.sort();
            let files = |list: &[usize]| list.iter().map(|i| nodes[*i].clone()).collect();
            out.push((files(&cycle), files(&rest)));
        }
    }
    out
}

fn tarjan(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        succ: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn connect(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.succ[v] {
            match s.index[w] {
                None => {
                    connect(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(i) if s.on_stack[w] => s.low[v] = s.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let n = succ.len();
    let mut s = State {
        succ,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            connect(&mut s, v);
        }
    }
    s.out
}

/// A cycle inside a strongly connected component: a shortest path from its
/// first node back to itself (breadth first).
fn one_cycle(succ: &[Vec<usize>], component: &[usize]) -> Vec<usize> {
    let start = *component.iter().min().expect("a non-empty component");
    let inside: BTreeSet<usize> = component.iter().copied().collect();
    let mut parent: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in &succ[v] {
            if w == start {
                let mut path = vec![start];
                let mut at = v;
                while at != start {
                    path.push(at);
                    at = parent[&at];
                }
                path.push(start);
                let last = path.len() - 1;
                path[1..last].reverse();
                return path;
            }
            if inside.contains(&w) && !parent.contains_key(&w) {
                parent.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    component.to_vec()
}

fn check(dir: &str) {
    let report = read_crate(Path::new(env!("CARGO_MANIFEST_DIR")).join(dir));
    let mut problems = Vec::new();
    problems.extend(report.long_files.iter().map(|f| format!("file over {MAX_FILE_LINES} lines: {f}")));
    problems.extend(report.long_fns.iter().map(|f| format!("function over {MAX_FN_LINES} lines: {f}")));
    problems.extend(report.cycles.iter().map(|c| format!("import cycle: {c}")));
    assert!(problems.is_empty(), "{dir}: {} problems\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_runtime_keeps_the_house_rules() {
    check("runtime/src");
}

#[test]
fn the_macros_keep_the_house_rules() {
    check("macros/src");
}

/// The checker itself: it finds a cycle, a long function and the paths a
/// file names (it would pass vacuously if it read nothing).
#[test]
fn the_checker_sees_what_it_is_about() {
    let a = PathBuf::from("a.rs");
    let b = PathBuf::from("b.rs");
    let c = PathBuf::from("c.rs");
    let edges = BTreeMap::from([
        (a.clone(), BTreeSet::from([b.clone()])),
        (b.clone(), BTreeSet::from([c.clone()])),
        (c.clone(), BTreeSet::from([a.clone()])),
    ]);
    assert_eq!(cycles(&edges), vec![(vec![a.clone(), b.clone(), c.clone(), a.clone()], vec![])]);

    let body = "    let x = 1;\n".repeat(MAX_FN_LINES);
    let text = format!(
        "use crate::store::query::Filter;\nmod child;\nfn long() {{\n{body}}}\nfn short() {{ super::up::f(); child::g(); crate::x!(); }}\n"
    );
    let ast = syn::parse_file(&text).expect("parses");
    let mut reader = Reader {
        module: vec!["denormalize".into(), "fanout".into()],
        children: vec![Reader::declared_children(&ast.items)],
        paths: Vec::new(),
        long_fns: Vec::new(),
        file: "t.rs",
    };
    reader.visit_file(&ast);
    assert_eq!(reader.long_fns.len(), 1, "{:?}", reader.long_fns);
    assert_eq!(reader.long_fns[0].1, MAX_FN_LINES + 2);
    let paths: Vec<String> = reader.paths.iter().map(|p| p.join("::")).collect();
    assert!(paths.contains(&"store::query::Filter".to_owned()), "{paths:?}");
    assert!(paths.contains(&"denormalize::up::f".to_owned()), "{paths:?}");
    assert!(paths.contains(&"denormalize::fanout::child::g".to_owned()), "{paths:?}");
    assert!(paths.contains(&"x".to_owned()), "{paths:?}");

    // The real sources are read: the runtime has files, functions and imports.
    let report = read_crate(Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src"));
    assert!(report.edges > 100, "only {} imports between the runtime's files", report.edges);
}

/// String surgery on types in one file of the macros: text patched after
/// `to_string()` (`.replace(' ', "")`), and a type printed from its tokens
/// (`ty.to_token_stream().to_string()`, `quote!(#elem).to_string()`).
/// Unit tests (`#[cfg(test)] mod`) may print what they assert.
struct Surgery<'a> {
    file: &'a str,
    found: Vec<String>,
}

impl<'ast> Visit<'ast> for Surgery<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let test_only = m
            .attrs
            .iter()
            .any(|a| a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|arg| arg == "test"));
        if !test_only {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        let line = call.method.span().start().line;
        let method = call.method.to_string();
        let receiver_is = |name: &str| matches!(&*call.receiver, syn::Expr::MethodCall(r) if r.method == name);
        if method.starts_with("replace") && receiver_is("to_string") {
            self.found.push(format!("{}:{line}: `to_string().{method}(..)`", self.file));
        }
        if method == "to_string" && printed_type(&call.receiver) {
            self.found.push(format!("{}:{line}: a type printed from its tokens", self.file));
        }
        syn::visit::visit_expr_method_call(self, call);
    }
}

/// Tokens of a type: `ty.to_token_stream()`, `ToTokens::to_token_stream(&f.ty)`,
/// `quote!(#elem)`.
fn printed_type(e: &syn::Expr) -> bool {
    use syn::Expr;
    match e {
        Expr::MethodCall(m) if m.method == "to_token_stream" || m.method == "into_token_stream" => {
            names_a_type(&m.receiver)
        }
        Expr::Call(c) => {
            let to_tokens = matches!(&*c.func, Expr::Path(p)
                if p.path.segments.last().is_some_and(|s| s.ident == "to_token_stream"));
            to_tokens && c.args.first().is_some_and(names_a_type)
        }
        Expr::Macro(m) if m.mac.path.segments.last().is_some_and(|s| s.ident == "quote") => {
            let tokens: Vec<proc_macro2::TokenTree> = m.mac.tokens.clone().into_iter().collect();
            matches!(tokens.as_slice(), [proc_macro2::TokenTree::Punct(p), proc_macro2::TokenTree::Ident(name)]
                if p.as_char() == '#' && is_type_name(&name.to_string()))
        }
        _ => false,
    }
}

/// An expression named as the macros name a `syn::Type`: `ty`, `f.ty`,
/// `subset.elem`, `&id_ty`.
fn names_a_type(e: &syn::Expr) -> bool {
    use syn::Expr;
    match e {
        Expr::Path(p) => p.path.segments.last().is_some_and(|s| is_type_name(&s.ident.to_string())),
        Expr::Field(f) => matches!(&f.member, syn::Member::Named(name) if is_type_name(&name.to_string())),
        Expr::Reference(r) => names_a_type(&r.expr),
        _ => false,
    }
}

fn is_type_name(name: &str) -> bool {
    ["ty", "elem"].iter().any(|t| name == *t || name.ends_with(&format!("_{t}")))
}

fn surgery(file: &str, text: &str) -> Vec<String> {
    let ast = syn::parse_file(text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut surgery = Surgery { file, found: Vec::new() };
    surgery.visit_file(&ast);
    surgery.found
}

#[test]
fn no_string_surgery_on_types_in_the_macros() {
    // The checker first: it finds each form, and lets a unit test print.
    let sample = r#"
        fn f() {
            let a = subset.elem.to_token_stream().to_string().replace(' ', "");
            let b = quote!(#ty).to_string();
            let c = quote::ToTokens::to_token_stream(&f.id_ty).to_string();
            let d = name.to_string()
                .replacen('_', "-", 1);
            let fine = (ident.to_string(), quote!(#doc).to_string(), text.replace('{', "{{"));
        }
        #[cfg(test)]
        mod tests {
            fn g() { assert_eq!(quote!(#elem).to_string(), "PartRef"); }
        }
    "#;
    let lines: Vec<String> = surgery("t.rs", sample).iter().map(|f| f.split(": ").next().unwrap().to_owned()).collect();
    assert_eq!(lines, ["t.rs:3", "t.rs:3", "t.rs:4", "t.rs:5", "t.rs:7"], "{:?}", surgery("t.rs", sample));

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("macros/src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    assert!(files.len() > 20, "only {} files under macros/src", files.len());
    let found: Vec<String> = files
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).expect("read a source file");
            surgery(&path.strip_prefix(&root).expect("under root").display().to_string(), &text)
        })
        .collect();
    assert!(
        found.is_empty(),
        "take the name from the syntax tree (`internals::ty::type_name`, `path_name`), \
         not from printed tokens:\n{}",
        found.join("\n")
    );
}

#[path = "house/root.rs"]
mod root;
