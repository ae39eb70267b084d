//! The docs name only API that exists. The Rust snippets of the README, the
//! guide and the attribute reference are compiled as doctests; what is not
//! compiled is the inline code of their prose (`Find::one`,
//! `docrel::connect`, `rels().x.load(..)`) and the `rust,ignore` blocks. This
//! test reads those from the README, CONTRIBUTING.md, `docs/` and the guide's
//! pages, and checks every docrel path and every call in them against the
//! items declared in the crates' sources (read with syn):
//!
//! - `docrel::a::b`: each segment is a declared name;
//! - `Type::name` and `Type.name` for a type docrel declares: `name` is one
//!   of its fields, variants, methods or associated items (or of a trait it
//!   implements);
//! - any other call, `x.name(..)`, `name(..)`, `Part::name(..)`: `name` is a
//!   declared function, or one of the few external names the docs use
//!   (the driver's sessions, iterators).
//!
//! Names with a capital or a `$` in a call are MongoDB's (`updateMany(..)`,
//! `$size(..)`), and attributes (`#[embed(max = 20)]`) are the derives' own
//! business, pinned by the doctests and trybuild cases.

use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

/// What the crates' sources declare.
#[derive(Default)]
struct Api {
    /// Every declared name: items, fields, variants, associated items, modules, `use .. as` names.
    names: BTreeSet<String>,
    /// Every function and method, those written inside macros included.
    fns: BTreeSet<String>,
    /// Each declared struct, enum, trait and type alias, and its members.
    members: BTreeMap<String, BTreeSet<String>>,
    /// The traits each type implements.
    traits: BTreeMap<String, BTreeSet<String>>,
    /// The functions each `macro_rules!` defines.
    macro_fns: BTreeMap<String, BTreeSet<String>>,
    /// Each macro invocation at item level and the types it names
    /// (`loaders!(RefMany)` writes `RefMany`'s loader methods).
    invocations: Vec<(String, Vec<String>)>,
}

impl Api {
    fn read() -> Api {
        let mut sources = Vec::new();
        for dir in ["runtime/src", "macros/src", "src"] {
            files(&root().join(dir), "rs", &mut sources);
        }
        let mut api = Api::default();
        for file in sources {
            let text = std::fs::read_to_string(&file).expect("read source");
            let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            api.visit_file(&parsed);
        }
        for (mac, types) in std::mem::take(&mut api.invocations) {
            let fns = api.macro_fns.get(&mac).cloned().unwrap_or_default();
            for ty in types {
                api.members.entry(ty).or_default().extend(fns.iter().cloned());
            }
        }
        api
    }

    fn declare(&mut self, owner: Option<&str>, name: &str) {
        self.names.insert(name.to_owned());
        if let Some(owner) = owner {
            self.members.entry(owner.to_owned()).or_default().insert(name.to_owned());
        }
    }

    fn ty(&mut self, name: &str) {
        self.names.insert(name.to_owned());
        self.members.entry(name.to_owned()).or_default();
    }

    /// `fn name` and `struct Name` inside macro bodies (`macro_rules!`,
    /// `quote!`): the methods the derives and the runtime's macros
    /// generate. Returns the functions.
    fn scan_tokens(&mut self, tokens: &TokenStream) -> BTreeSet<String> {
        let mut prev: Option<String> = None;
        let mut fns = BTreeSet::new();
        for tt in tokens.clone() {
            match &tt {
                TokenTree::Group(g) => fns.extend(self.scan_tokens(&g.stream())),
                TokenTree::Ident(id) => {
                    let id = id.to_string();
                    match prev.as_deref() {
                        Some("fn") => {
                            self.fns.insert(id.clone());
                            self.names.insert(id.clone());
                            fns.insert(id.clone());
                        }
                        Some("struct" | "enum" | "trait" | "type" | "const" | "mod") => {
                            self.names.insert(id.clone());
                        }
                        _ => {}
                    }
                    prev = Some(id);
                    continue;
                }
                _ => {}
            }
            prev = None;
        }
        fns
    }

    /// Whether `ty` answers to `member`: one of its own, or of a trait it implements.
    fn has_member(&self, ty: &str, member: &str) -> bool {
        let own = self.members.get(ty).is_some_and(|m| m.contains(member));
        own || self
            .traits
            .get(ty)
            .into_iter()
            .flatten()
            .any(|t| self.members.get(t).is_some_and(|m| m.contains(member)))
    }
}

fn last_ident(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => last_ident(&r.elem),
        _ => None,
    }
}

impl<'ast> Visit<'ast> for Api {
    fn visit_item_fn(&mut self, i: &'ast syn::ItemFn) {
        let name = i.sig.ident.to_string();
        self.fns.insert(name.clone());
        self.declare(None, &name);
        syn::visit::visit_item_fn(self, i);
    }
    fn visit_item_struct(&mut self, i: &'ast syn::ItemStruct) {
        let name = i.ident.to_string();
        self.ty(&name);
        for f in &i.fields {
            if let Some(id) = &f.ident {
                self.declare(Some(&name), &id.to_string());
            }
        }
        syn::visit::visit_item_struct(self, i);
    }
    fn visit_item_enum(&mut self, i: &'ast syn::ItemEnum) {
        let name = i.ident.to_string();
        self.ty(&name);
        for v in &i.variants {
            self.declare(Some(&name), &v.ident.to_string());
            for f in &v.fields {
                if let Some(id) = &f.ident {
                    self.declare(None, &id.to_string());
                }
            }
        }
        syn::visit::visit_item_enum(self, i);
    }
    fn visit_item_trait(&mut self, i: &'ast syn::ItemTrait) {
        let name = i.ident.to_string();
        self.ty(&name);
        for item in &i.items {
            let member = match item {
                syn::TraitItem::Fn(f) => {
                    self.fns.insert(f.sig.ident.to_string());
                    f.sig.ident.to_string()
                }
                syn::TraitItem::Const(c) => c.ident.to_string(),
                syn::TraitItem::Type(t) => t.ident.to_string(),
                _ => continue,
            };
            self.declare(Some(&name), &member);
        }
        syn::visit::visit_item_trait(self, i);
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if let Some(ty) = last_ident(&i.self_ty) {
            if let Some((_, path, _)) = &i.trait_ {
                if let Some(t) = path.segments.last() {
                    self.traits.entry(ty.clone()).or_default().insert(t.ident.to_string());
                }
            }
            for item in &i.items {
                let member = match item {
                    syn::ImplItem::Fn(f) => {
                        self.fns.insert(f.sig.ident.to_string());
                        f.sig.ident.to_string()
                    }
                    syn::ImplItem::Const(c) => c.ident.to_string(),
                    syn::ImplItem::Type(t) => t.ident.to_string(),
                    syn::ImplItem::Macro(m) => {
                        let _ = self.scan_tokens(&m.mac.tokens);
                        // `read_setters! { limit => read; session<'a> => session; }`:
                        // each entry names the method it writes.
                        for setter in setter_names(&m.mac.tokens) {
                            self.fns.insert(setter.clone());
                            self.declare(Some(&ty), &setter);
                        }
                        continue;
                    }
                    _ => continue,
                };
                self.declare(Some(&ty), &member);
            }
        }
        syn::visit::visit_item_impl(self, i);
    }
    fn visit_item_type(&mut self, i: &'ast syn::ItemType) {
        let name = i.ident.to_string();
        self.ty(&name);
        if let Some(target) = last_ident(&i.ty) {
            // `type Result<T> = std::result::Result<T, Error>`: the alias has the target's members.
            self.traits.entry(name).or_default().insert(target);
        }
        syn::visit::visit_item_type(self, i);
    }
    fn visit_item_const(&mut self, i: &'ast syn::ItemConst) {
        self.declare(None, &i.ident.to_string());
        syn::visit::visit_item_const(self, i);
    }
    fn visit_item_static(&mut self, i: &'ast syn::ItemStatic) {
        self.declare(None, &i.ident.to_string());
        syn::visit::visit_item_static(self, i);
    }
    fn visit_item_mod(&mut self, i: &'ast syn::ItemMod) {
        self.declare(None, &i.ident.to_string());
        syn::visit::visit_item_mod(self, i);
    }
    fn visit_use_rename(&mut self, i: &'ast syn::UseRename) {
        self.declare(None, &i.rename.to_string());
    }
    fn visit_macro(&mut self, i: &'ast syn::Macro) {
        let _ = self.scan_tokens(&i.tokens);
    }
    fn visit_item_macro(&mut self, i: &'ast syn::ItemMacro) {
        let fns = self.scan_tokens(&i.mac.tokens);
        match &i.ident {
            Some(name) => {
                self.declare(None, &name.to_string());
                self.macro_fns.insert(name.to_string(), fns);
            }
            None => {
                let named = i.mac.tokens.clone().into_iter().filter_map(|t| match t {
                    TokenTree::Ident(id) if id.to_string().starts_with(char::is_uppercase) => Some(id.to_string()),
                    _ => None,
                });
                let mac = i.mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                self.invocations.push((mac, named.collect()));
            }
        }
    }
}

/// The names an impl-level macro entry declares as methods: an identifier
/// followed by `=>`, possibly with a `<'a>` between.
fn setter_names(tokens: &TokenStream) -> Vec<String> {
    let tts: Vec<TokenTree> = tokens.clone().into_iter().collect();
    let mut out = Vec::new();
    for (i, tt) in tts.iter().enumerate() {
        let TokenTree::Ident(id) = tt else { continue };
        let mut j = i + 1;
        if matches!(tts.get(j), Some(TokenTree::Punct(p)) if p.as_char() == '<') {
            while j < tts.len() && !matches!(&tts[j], TokenTree::Punct(p) if p.as_char() == '>') {
                j += 1;
            }
            j += 1;
        }
        let arrow = matches!((tts.get(j), tts.get(j + 1)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == '=' && b.as_char() == '>');
        if arrow {
            out.push(id.to_string());
        }
    }
    out
}

/// Roots of paths that are not docrel's.
const EXTERNAL_ROOTS: &[&str] = &[
    // The Mongoose module, in the guide's comparison table.
    "mongoose",
    "std",
    "core",
    "serde",
    "serde_json",
    "tokio",
    "mongodb",
    "bson",
    "chrono",
    "tracing",
    "futures",
    "clap",
    "Vec",
    "Option",
    "String",
    "Box",
    "ObjectId",
    "DateTime",
    "Decimal128",
    "Bson",
    "Client",
    "ClientSession",
    "Database",
    "Collection",
    "ClientOptions",
    "Self",
];

/// Calls of external API the docs show: the driver's sessions and
/// collections, iterators, conversions.
const EXTERNAL_CALLS: &[&str] = &[
    "start_session",
    "start_transaction",
    "commit_transaction",
    "abort_transaction",
    "database",
    "collection",
    "client",
    "iter",
    "map",
    "collect",
    "enumerate",
    "into",
    "clone",
    "unwrap",
    "expect",
    "to_string",
    "as_str",
    "parse_str",
    "new",
    "from_millis",
    "main",
    "drop",
    "find_one",
    "insert_one",
    "len",
    "is_empty",
    // Mongoose, Mongoid and Prisma, which the guide compares docrel with.
    "populate",
    "includes",
    "only",
    "create",
    "model",
    "find_one_and_update",
];

/// A place a doc names something: the file, and the text it was read from.
struct Mention {
    file: String,
    text: String,
}

/// Inline code of the prose (a span may wrap lines) and the lines of
/// `rust,ignore` blocks, of one Markdown file.
fn mentions(file: &Path) -> Vec<Mention> {
    let text = std::fs::read_to_string(file).expect("read doc");
    let shown = file.strip_prefix(root()).unwrap_or(file).display().to_string();
    let mut prose = String::new();
    let mut out = Vec::new();
    let mut fence: Option<bool> = None; // Some(checked) inside a fence
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(info.starts_with("rust") && info.contains("ignore")),
            };
            prose.push('\n');
            continue;
        }
        match fence {
            Some(true) if !trimmed.starts_with("#[") => {
                out.push(Mention { file: shown.clone(), text: line.to_owned() })
            }
            Some(_) => {}
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    // Paragraphs end at blank lines; spans do not cross them.
    for paragraph in prose.split("\n\n") {
        let flat = paragraph.replace('\n', " ");
        let mut parts = flat.split('`');
        parts.next();
        while let Some(code) = parts.next() {
            if !code.trim_start().starts_with("#[") && !code.trim_start().starts_with("#![") {
                out.push(Mention { file: shown.clone(), text: code.to_owned() });
            }
            parts.next();
        }
    }
    out
}

#[derive(Debug, PartialEq)]
enum Tok {
    Ident(String),
    Path,   // ::
    Dot,    // .
    Open,   // (
    Lt,     // <
    Gt,     // >
    Dollar, // $
    Other,
}

fn tokens(text: &str) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect()));
            continue;
        }
        if c == '"' {
            // A string literal says nothing about the API.
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += 1;
            }
            out.push(Tok::Other);
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push(Tok::Path);
            i += 1;
        } else {
            out.push(match c {
                '.' => Tok::Dot,
                '(' => Tok::Open,
                '<' => Tok::Lt,
                '>' => Tok::Gt,
                '$' => Tok::Dollar,
                c if c.is_whitespace() => {
                    i += 1;
                    continue;
                }
                _ => Tok::Other,
            });
        }
        i += 1;
    }
    out
}

/// A path as written, `a::b::<T>::c`, generic arguments dropped, and what
/// comes before and after it.
struct Path_ {
    segments: Vec<String>,
    after_dot: bool,
    after_dollar: bool,
    call: bool,
    field: Option<String>,
}

fn paths(toks: &[Tok]) -> Vec<Path_> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let Tok::Ident(first) = &toks[i] else {
            i += 1;
            continue;
        };
        let after_dot = i > 0 && toks[i - 1] == Tok::Dot;
        let after_dollar = i > 0 && toks[i - 1] == Tok::Dollar;
        let mut segments = vec![first.clone()];
        i += 1;
        while i < toks.len() && toks[i] == Tok::Path {
            match toks.get(i + 1) {
                Some(Tok::Ident(next)) => {
                    segments.push(next.clone());
                    i += 2;
                }
                Some(Tok::Lt) => {
                    // `::<T>`: skip the generic arguments.
                    let mut depth = 0;
                    i += 1;
                    while i < toks.len() {
                        match toks[i] {
                            Tok::Lt => depth += 1,
                            Tok::Gt => depth -= 1,
                            _ => {}
                        }
                        i += 1;
                        if depth == 0 {
                            break;
                        }
                    }
                }
                _ => break,
            }
        }
        let call = toks.get(i) == Some(&Tok::Open);
        let field = match (toks.get(i), toks.get(i + 1)) {
            (Some(Tok::Dot), Some(Tok::Ident(f))) => Some(f.clone()),
            _ => None,
        };
        out.push(Path_ { segments, after_dot, after_dollar, call, field });
    }
    out
}

/// The problem with one path, if any.
fn check(api: &Api, p: &Path_) -> Option<String> {
    let segs = &p.segments;
    // A single capital is a type parameter (`T::repo(&db)`), not a type.
    let is_docrel_type = |s: &str| api.members.contains_key(s) && s.starts_with(char::is_uppercase) && s.len() > 1;
    let mongo_name = |s: &str| s.chars().any(char::is_uppercase) || p.after_dollar;
    if p.after_dot {
        let name = &segs[0];
        let known = api.fns.contains(name) || EXTERNAL_CALLS.contains(&name.as_str());
        return (p.call && !mongo_name(name) && !known).then(|| format!("`.{name}(..)`: no such method"));
    }
    if segs.len() == 1 {
        let name = &segs[0];
        if let Some(field) = &p.field {
            if is_docrel_type(name) && !api.has_member(name, field) {
                return Some(format!("`{name}.{field}`: `{name}` has no `{field}`"));
            }
        }
        let known = api.names.contains(name) || EXTERNAL_CALLS.contains(&name.as_str());
        return (p.call && !mongo_name(name) && !known).then(|| format!("`{name}(..)`: no such function"));
    }
    if EXTERNAL_ROOTS.contains(&segs[0].as_str()) {
        return None;
    }
    if segs[0] == "docrel" {
        for s in &segs[1..] {
            if s == "bson" || s == "mongodb" {
                return None;
            }
            if !api.names.contains(s) {
                return Some(format!("`{}`: docrel declares no `{s}`", segs.join("::")));
            }
        }
        return None;
    }
    if is_docrel_type(&segs[0]) {
        let member = &segs[1];
        return (!api.has_member(&segs[0], member))
            .then(|| format!("`{}`: `{}` has no `{member}`", segs.join("::"), segs[0]));
    }
    if segs[0].starts_with(char::is_uppercase) {
        // A type of the reader's (`Part::fields()`): only calls are docrel's.
        let name = &segs[segs.len() - 1];
        let known = api.fns.contains(name) || EXTERNAL_CALLS.contains(&name.as_str());
        return (p.call && !known).then(|| format!("`{}(..)`: no such function", segs.join("::")));
    }
    // A docrel module without the crate's name (`fanout::repair`).
    let unknown = segs.iter().find(|s| !api.names.contains(*s))?;
    Some(format!("`{}`: docrel declares no `{unknown}`", segs.join("::")))
}

fn docs() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md"), root().join("CONTRIBUTING.md"), root().join("src/attributes.md")];
    files(&root().join("docs"), "md", &mut out);
    out.retain(|f| !f.components().any(|c| c.as_os_str() == "book"));
    out
}

#[test]
fn every_api_name_the_docs_mention_exists() {
    let api = Api::read();
    let mut problems = BTreeSet::new();
    let mut checked = 0;
    for file in docs() {
        for m in mentions(&file) {
            for p in paths(&tokens(&m.text)) {
                checked += 1;
                if let Some(problem) = check(&api, &p) {
                    problems.insert(format!("{}: {problem} (in `{}`)", m.file, m.text.trim()));
                }
            }
        }
    }
    eprintln!("{checked} names checked");
    assert!(checked > 500, "the docs were read: {checked} names checked");
    assert!(
        problems.is_empty(),
        "the docs name API that does not exist:\n{}",
        problems.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The checker itself: what exists passes, what does not is caught.
#[test]
fn the_checker_tells_existing_names_from_missing_ones() {
    let api = Api::read();
    let verdict = |code: &str| -> Vec<Option<String>> { paths(&tokens(code)).iter().map(|p| check(&api, p)).collect() };
    for good in [
        "docrel::connect(uri)",
        "Find::one",
        "Error::Connect",
        "Misuse::ShardKey",
        "Part::repo(&db).insert(&part).session(&mut s)",
        "docrel::check::copies::<Part>().repair(&db).run()",
        "rels().x.load::<V>(&db, &parents)",
        "LinkOutcome.transactional",
        "updateMany({product: id})",
    ] {
        assert!(verdict(good).iter().all(Option::is_none), "`{good}` exists: {:?}", verdict(good));
    }
    for bad in
        ["Update::new()", "docrel::connect_later(uri)", "Find::first", "repo.insert_all(&docs)", "Error::Timeout"]
    {
        assert!(verdict(bad).iter().any(Option::is_some), "`{bad}` does not exist");
    }
}

/// The README is the front door: at most 400 lines (issue 29); detail goes
/// to the guide and docs/.
#[test]
fn the_readme_is_at_most_400_lines() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(lines <= 400, "README.md has {lines} lines; move detail to the guide or docs/");
}
