//! Generation for the references an element struct holds
//! (`#[reference(to = User)]` on `Comment::author`): their descriptors,
//! which the `#[embed]` entry of every document embedding the struct
//! carries, the copies made through them, and the handles struct
//! (`Comment::refs().author`) the loaders take.

use super::copies::elem_copy;
use super::relations::checked_id;
use super::{Checked, CollectionOf};
use crate::internals::model::{ElementRef, EmbeddedModel, OnDelete};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};

/// The `ElemRef` descriptors, their checks, and the handles.
pub struct Generated {
    pub descriptors: Vec<TokenStream>,
    pub checks: TokenStream,
    pub handles: TokenStream,
}

pub fn references(m: &EmbeddedModel, checked: &mut Checked) -> Generated {
    let mut descriptors = Vec::new();
    let mut checks = Vec::new();
    for r in &m.refs {
        descriptors.push(descriptor(r, checked, &mut checks));
    }
    Generated { descriptors, checks: quote!(#(#checks)*), handles: handles(m, checked) }
}

fn descriptor(r: &ElementRef, checked: &mut Checked, checks: &mut Vec<TokenStream>) -> TokenStream {
    let to = checked.doc(&r.to.path);
    let target = CollectionOf(to.clone());
    let (field, rust_field, target_type, optional) = (&r.stored, r.ident.to_string(), &r.to.name, r.optional);
    let rule = syn::Ident::new(
        match r.on_delete {
            OnDelete::Nothing => "Nothing",
            OnDelete::Pull => "Pull",
            OnDelete::Cascade => "Cascade",
            OnDelete::Restrict => "Restrict",
        },
        proc_macro2::Span::call_site(),
    );
    let copies: Vec<_> = r
        .copies
        .iter()
        .map(|(copied, via)| {
            let (copy, src) = elem_copy(copied, checked);
            // rustc reports an unmet bound at the type argument: `via`'s.
            let via_to = super::respan(to.to_token_stream(), via.span());
            checks.push(quote_spanned! {via.span()=>
                const _: bool = __docrel::leads_to::<#via_to, #src>();
            });
            copy
        })
        .collect();
    quote! {
        __docrel::ElemRef {
            field: #field,
            rust_field: #rust_field,
            target: #target,
            target_type: #target_type,
            optional: #optional,
            on_delete: __docrel::OnDelete::#rule,
            copies: &[#(#copies),*],
        }
    }
}

/// `CommentRefs { author: RefInElement<Comment, User> }` and `Comment::refs()`.
fn handles(m: &EmbeddedModel, checked: &mut Checked) -> TokenStream {
    if m.refs.is_empty() {
        return TokenStream::new();
    }
    let (ident, vis, refs_ty) = (m.ident, m.vis, &m.refs_name);
    let mut decls = Vec::new();
    let mut inits = Vec::new();
    for (index, r) in m.refs.iter().enumerate() {
        let (name, to) = (r.ident, checked.doc(&r.to.path));
        let held = checked_id(&to, r.id, checked);
        let visit = if r.optional { quote!(visit_option) } else { quote!(visit_id) };
        let index = proc_macro2::Literal::usize_unsuffixed(index);
        let doc = format!("The reference declared on `{name}`.");
        decls.push(quote! { #[doc = #doc] pub #name: __docrel::RefInElement<#ident, #to>, });
        inits.push(quote! {
            #name: __docrel::RefInElement::new(#index, |__e: &#ident, __f| __docrel::#visit::<#held>(&__e.#name, __f)),
        });
    }
    let doc = format!("Typed handles of the references held by [`{ident}`], from [`{ident}::refs`].");
    quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #vis struct #refs_ty {
            #(#decls)*
        }

        #[allow(dead_code)]
        impl #ident {
            /// Typed handles of the references this element holds: hand one
            /// to `each` of the embedded array's handle to load through it.
            pub const fn refs() -> __docrel::Handles<#refs_ty> {
                __docrel::Handles::new(&Self::__DOCREL_REFS)
            }

            #[doc(hidden)]
            pub const __DOCREL_REFS: #refs_ty = #refs_ty { #(#inits)* };
        }
    }
}
