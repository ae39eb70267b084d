//! Warnings on stable Rust. `proc_macro::Diagnostic` (a derive's own
//! warnings) is nightly-only; what stable offers is the `deprecated` lint,
//! which prints "use of deprecated method `PATH`: NOTE" where a
//! deprecated item is used. So each unacknowledged piece of advice becomes
//! a hidden deprecated method of the user's own type, named after the rule
//! (`Patron::docrel_rule_3_unbounded_embed`: declared next to the type, it
//! is the shortest path rustc prints), whose note names the rule, the field
//! and the fix; the derive uses it at the attribute's span, which is where
//! rustc reports it. A second field breaking the same rule gets the field in
//! the name (`docrel_rule_3_unbounded_embed_notes`). Advice that depends on
//! another type (is it a document? is the other side an array? is the
//! source field write-heavy?) probes for it and calls the deprecated method
//! only when it holds; otherwise a quiet twin of the same name. Acknowledge
//! with the attribute's `allow_..` key (`#[allow(deprecated)]` on the struct
//! does not reach code a derive generates).

use super::Checked;
use crate::internals::advice::{Advice, When};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

/// The deprecated methods (at module level, next to the type) and their
/// uses (inside the derive's `const _` block).
pub fn warnings(ident: &Ident, advice: &[Advice], checked: &mut Checked) -> (TokenStream, TokenStream) {
    let pending: Vec<&Advice> = advice.iter().filter(|a| !a.acknowledged).collect();
    if pending.is_empty() {
        return (TokenStream::new(), TokenStream::new());
    }
    let names: Vec<Ident> = pending
        .iter()
        .map(|a| {
            let shared = pending.iter().filter(|b| b.name == a.name).count() > 1;
            let field = a.field.trim_start_matches("r#");
            let name = if shared { format!("{}_{field}", a.name) } else { a.name.to_owned() };
            Ident::new(&name, a.span)
        })
        .collect();
    let methods = pending.iter().zip(&names).map(|(a, name)| {
        let note = &a.note;
        quote! {
            #[deprecated(note = #note)]
            fn #name(&self) {}
        }
    });
    let declared = quote! {
        #[allow(dead_code, non_snake_case)]
        impl #ident {
            #(#methods)*
        }
    };
    // The twin of each probed method that says nothing, called when the
    // probe finds the advice does not apply: the runtime's `Quiet` has
    // every rule's; a field-suffixed name gets one per derive.
    let probed: Vec<&Ident> =
        pending.iter().zip(&names).filter(|(a, _)| !matches!(a.when, When::Always)).map(|(_, n)| n).collect();
    let (quiet_ty, quiet) = if probed.iter().all(|n| pending.iter().any(|a| *n == a.name)) {
        (quote!(__docrel::Quiet), TokenStream::new())
    } else {
        let quiet = quote! {
            struct __DocrelQuiet;
            #[allow(dead_code, non_snake_case)]
            impl __DocrelQuiet { #(fn #probed(&self) {})* }
        };
        (quote!(__DocrelQuiet), quiet)
    };
    let uses = pending.iter().zip(&names).enumerate().map(|(i, (a, name))| {
        let fn_name = format_ident!("__docrel_advice_{}", i);
        let call = quote_spanned!(a.span=> .#name());
        let body = match &a.when {
            When::Always => quote_spanned!(a.span=> let _ = #ident::#name;),
            When::IsDocument(ty) => quote! {
                use __docrel::{Otherwise as _, WhenDocument as _};
                (&__docrel::Probe::<#ty, #ident, #quiet_ty>::new()).pick()#call;
            },
            When::InverseIsArray { to, inverse } => {
                let links = checked.with_field(to, inverse);
                let rust = inverse.to_string();
                let rust = rust.trim_start_matches("r#");
                select(ident, &quiet_ty, &call, quote!(__docrel::link_is_array(<#links>::__DOCREL_LINKS, #rust)))
            }
            When::WriteHeavy { src, field } => {
                let src = checked.doc(src);
                let field = field.to_string();
                let field = field.trim_start_matches("r#");
                select(ident, &quiet_ty, &call, quote!(__docrel::contains(<#src>::__DOCREL_WRITE_HEAVY, #field)))
            }
        };
        quote! {
            #[allow(dead_code, clippy::all)]
            fn #fn_name() { #body }
        }
    });
    (declared, quote! { #quiet #(#uses)* })
}

/// Calls the deprecated method when the `const` condition holds, its quiet
/// twin otherwise.
fn select(ident: &Ident, quiet: &TokenStream, call: &TokenStream, condition: TokenStream) -> TokenStream {
    quote! {
        __docrel::Select::<{ #condition }, #ident, #quiet>::new().pick()#call;
    }
}

/// The advice descriptors of the schema, for the runtime report.
pub fn descriptors(advice: &[Advice], checked: &mut Checked) -> Vec<TokenStream> {
    advice
        .iter()
        .map(|a| {
            let rule = a.name;
            let field = &a.field;
            let note = &a.note;
            let acknowledged = a.acknowledged;
            let applies = match &a.when {
                When::Always => quote!(|| true),
                When::IsDocument(ty) => quote! {
                    || {
                        use __docrel::{Otherwise as _, WhenDocument as _};
                        (&__docrel::Probe::<#ty, (), ()>::new()).holds()
                    }
                },
                When::InverseIsArray { to, inverse } => {
                    let links = checked.with_field(to, inverse);
                    let rust = inverse.to_string();
                    let rust = rust.trim_start_matches("r#");
                    quote!(|| __docrel::link_is_array(<#links>::__DOCREL_LINKS, #rust))
                }
                When::WriteHeavy { src, field } => {
                    let src = checked.doc(src);
                    let field = field.to_string();
                    let field = field.trim_start_matches("r#");
                    quote!(|| __docrel::contains(<#src>::__DOCREL_WRITE_HEAVY, #field))
                }
            };
            quote! {
                __docrel::Advice {
                    rule: #rule,
                    field: #field,
                    note: #note,
                    acknowledged: #acknowledged,
                    applies: #applies,
                }
            }
        })
        .collect()
}
