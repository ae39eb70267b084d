//! The public root and the patterns, read from the sources: at most 40
//! names at the root of `docrel`, none shadowing the prelude, and no
//! pattern kind compared as a string in the runtime.

use std::collections::BTreeSet;
use std::path::Path;

/// The names a crate root makes public: its `pub` items and the leaves of
/// its `pub use`s (a glob of the runtime counts the runtime's root), minus
/// what is `#[doc(hidden)]`. A derive and the trait of the same name are
/// one name to a reader.
fn public_names(file: &Path, out: &mut BTreeSet<String>) {
    let text = std::fs::read_to_string(file).expect("read a crate root");
    let ast = syn::parse_file(&text).expect("a crate root parses");
    let hidden = |attrs: &[syn::Attribute]| {
        attrs.iter().any(
            |a| matches!(&a.meta, syn::Meta::List(l) if l.path.is_ident("doc") && l.tokens.to_string() == "hidden"),
        )
    };
    fn leaves(tree: &syn::UseTree, file: &Path, out: &mut BTreeSet<String>) {
        match tree {
            syn::UseTree::Path(p) if p.ident == "docrel_runtime" && matches!(*p.tree, syn::UseTree::Glob(_)) => {
                public_names(&file.parent().unwrap().join("../runtime/src/lib.rs"), out)
            }
            syn::UseTree::Path(p) => leaves(&p.tree, file, out),
            syn::UseTree::Name(n) => drop(out.insert(n.ident.to_string())),
            syn::UseTree::Rename(r) => drop(out.insert(r.rename.to_string())),
            syn::UseTree::Glob(_) => panic!("{}: a glob re-export hides what the root holds", file.display()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| leaves(t, file, out)),
        }
    }
    for item in &ast.items {
        let public = |vis: &syn::Visibility| matches!(vis, syn::Visibility::Public(_));
        match item {
            syn::Item::Use(u) if public(&u.vis) && !hidden(&u.attrs) => leaves(&u.tree, file, out),
            syn::Item::Mod(m) if public(&m.vis) && !hidden(&m.attrs) => drop(out.insert(m.ident.to_string())),
            syn::Item::Fn(f) if public(&f.vis) && !hidden(&f.attrs) => drop(out.insert(f.sig.ident.to_string())),
            syn::Item::Struct(s) if public(&s.vis) && !hidden(&s.attrs) => drop(out.insert(s.ident.to_string())),
            syn::Item::Enum(e) if public(&e.vis) && !hidden(&e.attrs) => drop(out.insert(e.ident.to_string())),
            syn::Item::Const(c) if public(&c.vis) && !hidden(&c.attrs) => drop(out.insert(c.ident.to_string())),
            syn::Item::Trait(t) if public(&t.vis) && !hidden(&t.attrs) => drop(out.insert(t.ident.to_string())),
            _ => {}
        }
    }
}

/// A user reads the root of `docrel` in one screen: at most 40 names, and
/// none that shadows a name of the prelude under `use docrel::*`.
#[test]
fn the_public_root_fits_one_screen() {
    let mut names = BTreeSet::new();
    public_names(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"), &mut names);
    assert!(names.contains("Document") && names.contains("schema"), "the root was read: {names:?}");
    assert!(names.len() <= 40, "{} public names at the root of docrel (at most 40): {names:?}", names.len());
    let prelude = ["Copy", "Clone", "Option", "Some", "None", "Ok", "Err", "Vec", "String", "Box", "Default", "Drop"];
    let shadowing: Vec<&&str> = prelude.iter().filter(|p| names.contains(**p)).collect();
    assert!(shadowing.is_empty(), "names at the root shadow the prelude: {shadowing:?}");
}

/// The patterns' words, each of which a relationship's kind once travelled
/// as: a comparison with one of them means a pattern decided by a string
/// again, where `schema::Pattern` (or the admin's `CheckKind`) should be
/// compared.
const PATTERN_WORDS: &[&str] =
    &["embed", "subset", "references", "bucket", "counter", "parent", "two-way", "orphans", "dangling", "copies"];

/// Each comparison of a value with a pattern's word in `text` (comments
/// and the test modules' assertions on rendered text excepted).
fn pattern_comparisons(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.starts_with("//")) {
        for word in PATTERN_WORDS {
            let quoted = format!("\"{word}\"");
            let compared =
                [format!("== {quoted}"), format!("!= {quoted}"), format!("{quoted} =="), format!("{quoted} !=")];
            if compared.iter().any(|c| line.contains(c.as_str())) {
                out.push(line.to_owned());
            }
        }
    }
    out
}

#[test]
fn no_pattern_kind_is_compared_as_a_string() {
    let mut files = Vec::new();
    super::rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src"), &mut files);
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read a source file");
        found.extend(pattern_comparisons(&text).into_iter().map(|l| format!("{}: {l}", file.display())));
    }
    assert!(
        found.is_empty(),
        "patterns compared as strings (compare `schema::Pattern` instead):\n{}",
        found.join("\n")
    );
    // The check sees what it is about.
    assert_eq!(
        pattern_comparisons("let x = a.kind != \"subset\" && y;\n// a == \"bucket\""),
        ["let x = a.kind != \"subset\" && y;"]
    );
}
