//! Generation for `#[derive(Embedded)]`: the copies an element struct
//! holds, the references it holds with their handles, and the stored name
//! of each field.

use super::copies::elem_copy;
use super::Checked;
use crate::internals::model::EmbeddedModel;
use proc_macro2::TokenStream;
use quote::quote;

/// `#[derive(Embedded)]`: the copies an element struct of a reference array
/// holds (`{id, name}` with `name` copied from `Part::name`), the stored
/// name of each field, which the array's schema entry reads for its key,
/// and the advice on its copies.
pub fn expand(m: &EmbeddedModel) -> TokenStream {
    let mut checked = Checked::default();
    let ident = m.ident;
    let descriptors: Vec<_> = m.copies.iter().map(|c| elem_copy(c, &mut checked).0).collect();
    let refs = super::elements::references(m, &mut checked);
    let (ref_descriptors, ref_checks, handles) = (&refs.descriptors, &refs.checks, &refs.handles);
    let refs_const = (!ref_descriptors.is_empty()).then(|| {
        quote! { const REFS: &'static [__docrel::ElemRef] = &[#(#ref_descriptors),*]; }
    });
    let stored_names = m.fields.iter().map(|f| {
        let (constant, stored) = (super::element_stored_const(f.ident), &f.stored);
        let doc = format!("The stored name of `{}`.", f.ident);
        quote! { #[doc = #doc] pub const #constant: &'static str = #stored; }
    });
    let (advice_methods, warnings) = super::warn::warnings(ident, &m.advice, &mut checked);
    let aliases = checked.decls();
    let items = quote! {
        #aliases

        #warnings
        #ref_checks
        #handles

        #[automatically_derived]
        impl __docrel::Embedded for #ident {
            const COPIES: &'static [__docrel::ElemCopy] = &[#(#descriptors),*];
            #refs_const
        }

        #[allow(non_upper_case_globals)]
        #[doc(hidden)]
        impl #ident {
            #(#stored_names)*
        }
    };
    let out = super::wrap_in_const(m.krate.as_ref(), items);
    quote!(#advice_methods #out)
}
