//! What docrel reads from a field's type as written: the element of a `Vec`,
//! the inner type of an `Option`, whether it is an id type, and its name as
//! the schema report prints it.

use quote::ToTokens;
use syn::{GenericArgument, Path, PathArguments, Type};

/// The type as written, without the invisible group a `macro_rules!`
/// `$t:ty` wraps it in, or parentheses (as serde reads it).
pub fn ungroup(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Group(g) => ty = &g.elem,
            Type::Paren(p) => ty = &p.elem,
            _ => return ty,
        }
    }
}

/// `T` of `Vec<T>` (by the last path segment, as users write it).
pub fn vec_element(ty: &Type) -> Option<&Type> {
    generic_arg(ty, "Vec")
}

/// `T` of `Option<T>`.
pub fn option_inner(ty: &Type) -> Option<&Type> {
    generic_arg(ty, "Option")
}

/// The element of an array field: `T` of `Vec<T>` or of `Option<Vec<T>>`,
/// with whether the array may be absent.
pub fn array_element(ty: &Type) -> Option<(&Type, bool)> {
    match vec_element(ty) {
        Some(elem) => Some((elem, false)),
        None => option_inner(ty).and_then(vec_element).map(|elem| (elem, true)),
    }
}

fn generic_arg<'t>(ty: &'t Type, wrapper: &str) -> Option<&'t Type> {
    let Type::Path(p) = ungroup(ty) else { return None };
    let last = p.path.segments.last()?;
    if last.ident != wrapper {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    match args.args.first()? {
        GenericArgument::Type(t) if args.args.len() == 1 => Some(ungroup(t)),
        _ => None,
    }
}

/// The name of the type's last path segment (`ObjectId` of `bson::oid::ObjectId`).
pub fn last_ident(ty: &Type) -> Option<String> {
    let Type::Path(p) = ungroup(ty) else { return None };
    p.path.segments.last().map(|s| s.ident.to_string())
}

/// Whether a type is written as one of the `_id` types docrel knows, or a
/// newtype id named like one (`PartId`), so an array of it holds ids
/// rather than `{id, ...}` structs.
pub fn is_id_type(ty: &Type) -> bool {
    last_ident(ty).is_some_and(|name| {
        matches!(name.as_str(), "ObjectId" | "String" | "i32" | "i64" | "Uuid")
            || name.len() > 2 && name.ends_with("Id") && name.starts_with(|c: char| c.is_uppercase())
    })
}

/// A type that is certainly not a `Document`: a number, text, a BSON value,
/// or a std collection (a user crate cannot implement the trait for those).
/// The rule 2 probe is left out for these: it costs compile time and would
/// always find nothing.
pub fn is_plain_value(ty: &Type) -> bool {
    if let Type::Reference(_) | Type::Slice(_) | Type::Array(_) | Type::Tuple(_) = ungroup(ty) {
        return true;
    }
    last_ident(ty).is_some_and(|name| {
        matches!(
            name.as_str(),
            "bool"
                | "char"
                | "str"
                | "String"
                | "i8"
                | "i16"
                | "i32"
                | "i64"
                | "i128"
                | "isize"
                | "u8"
                | "u16"
                | "u32"
                | "u64"
                | "u128"
                | "usize"
                | "f32"
                | "f64"
                | "ObjectId"
                | "DateTime"
                | "Uuid"
                | "Decimal128"
                | "Bson"
                | "Binary"
                | "Timestamp"
                | "Vec"
                | "VecDeque"
                | "Option"
                | "HashMap"
                | "BTreeMap"
                | "HashSet"
                | "BTreeSet"
        )
    })
}

/// A type as written, printed the way rustdoc would: `Vec<ObjectId>`,
/// `Option<&'static str>`, `crate::catalog::Part`.
pub fn type_name(ty: &Type) -> String {
    match ty {
        Type::Path(p) if p.qself.is_none() => path_name(&p.path),
        Type::Reference(r) => {
            let lifetime = r.lifetime.as_ref().map(|l| format!("{l} ")).unwrap_or_default();
            let mutability = if r.mutability.is_some() { "mut " } else { "" };
            format!("&{lifetime}{mutability}{}", type_name(&r.elem))
        }
        Type::Slice(s) => format!("[{}]", type_name(&s.elem)),
        Type::Array(a) => format!("[{}; {}]", type_name(&a.elem), a.len.to_token_stream()),
        Type::Tuple(t) if t.elems.len() == 1 => format!("({},)", type_name(&t.elems[0])),
        Type::Tuple(t) => format!("({})", t.elems.iter().map(type_name).collect::<Vec<_>>().join(", ")),
        Type::Paren(p) => format!("({})", type_name(&p.elem)),
        Type::Group(g) => type_name(&g.elem),
        other => other.to_token_stream().to_string(),
    }
}

/// A path as written: `catalog::Product`, `Vec<PartRef>`.
pub fn path_name(path: &Path) -> String {
    let segments = path.segments.iter().map(|s| {
        let args = match &s.arguments {
            PathArguments::None => String::new(),
            PathArguments::AngleBracketed(a) => {
                format!("<{}>", a.args.iter().map(argument_name).collect::<Vec<_>>().join(", "))
            }
            PathArguments::Parenthesized(p) => {
                let inputs = p.inputs.iter().map(type_name).collect::<Vec<_>>().join(", ");
                match &p.output {
                    syn::ReturnType::Default => format!("({inputs})"),
                    syn::ReturnType::Type(_, out) => format!("({inputs}) -> {}", type_name(out)),
                }
            }
        };
        format!("{}{args}", s.ident)
    });
    let leading = if path.leading_colon.is_some() { "::" } else { "" };
    format!("{leading}{}", segments.collect::<Vec<_>>().join("::"))
}

fn argument_name(arg: &GenericArgument) -> String {
    match arg {
        GenericArgument::Type(t) => type_name(t),
        GenericArgument::Lifetime(l) => l.to_string(),
        GenericArgument::AssocType(a) => format!("{} = {}", a.ident, type_name(&a.ty)),
        other => other.to_token_stream().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{path_name, type_name};
    use syn::parse_quote;

    #[test]
    fn types_through_macro_rules_are_read_as_written() {
        use super::{array_element, option_inner, ungroup, vec_element};
        use quote::quote;
        // `$t:ty` arrives as an invisible group.
        let group =
            |ty: syn::Type| syn::Type::Group(syn::TypeGroup { group_token: Default::default(), elem: Box::new(ty) });
        let vec = group(parse_quote!(Vec<ObjectId>));
        assert!(vec_element(&vec).is_some());
        let opt = group(parse_quote!(Option<Vec<PartRef>>));
        let (elem, optional) = array_element(&opt).expect("an array");
        assert_eq!((quote!(#elem).to_string(), optional), ("PartRef".to_owned(), true));
        assert!(option_inner(&parse_quote!((Option<i32>))).is_some());
        assert_eq!(type_name(ungroup(&group(parse_quote!(String)))), "String");
    }

    #[test]
    fn names_print_as_written() {
        assert_eq!(type_name(&parse_quote!(Vec<ObjectId>)), "Vec<ObjectId>");
        assert_eq!(type_name(&parse_quote!(Option<&'static str>)), "Option<&'static str>");
        assert_eq!(
            type_name(&parse_quote!(std::collections::HashMap<String, (i32, bool)>)),
            "std::collections::HashMap<String, (i32, bool)>"
        );
        assert_eq!(type_name(&parse_quote!([u8; 16])), "[u8; 16]");
        assert_eq!(path_name(&parse_quote!(::catalog::Product)), "::catalog::Product");
    }
}
