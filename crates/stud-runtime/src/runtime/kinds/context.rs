use super::guest_call;
use crate::runtime::contract::v0_1::stud::extension::context_provider_types::{
    ComposeContext, Fragment,
};
use crate::runtime::error::CallError;
use crate::runtime::extension::Extension;

impl Extension {
    pub async fn context_provide(&self, ctx: &ComposeContext) -> Result<Vec<Fragment>, CallError> {
        let ctx = ctx.clone();
        guest_call!(self, ContextProvider, "provide", |g, store| g
            .call_provide(store, &ctx)
            .await)
    }
}
