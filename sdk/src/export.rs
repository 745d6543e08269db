//! The registration macros, one per kind. Each expands, in the extension's
//! crate, to the kind's export bindings, the glue that forwards every export
//! to the author's trait implementation, and the contract-version stamp.

/// Shared part of every `export_*!` macro.
#[doc(hidden)]
#[macro_export]
macro_rules! __stud_export_common {
    ($kind:ident, $trait:path, $ty:ty) => {
        #[doc(hidden)]
        #[allow(clippy::all, dead_code, unused_imports, missing_docs)]
        mod __stud_bindings {
            $crate::__private::__bindings!($kind);
        }

        #[doc(hidden)]
        static __STUD_INSTANCE: $crate::__private::Instance<$ty> =
            $crate::__private::Instance::new();

        #[doc(hidden)]
        struct __StudGlue;

        impl __stud_bindings::exports::stud::extension::lifecycle::Guest for __StudGlue {
            fn init(config: ::std::string::String) -> $crate::__private::Res<()> {
                let config = $crate::__private::wit($crate::__private::parse_config(&config))?;
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $trait>::init(x, &config)))
            }
            fn activate() -> $crate::__private::Res<()> {
                Ok(())
            }
            fn deactivate() -> $crate::__private::Res<()> {
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $trait>::deactivate(x)))
            }
            fn dispose() {
                __STUD_INSTANCE.with(|x| <$ty as $trait>::dispose(x))
            }
        }

        #[cfg(target_arch = "wasm32")]
        #[used]
        #[unsafe(link_section = "stud:contract-version")]
        static __STUD_CONTRACT_VERSION: [u8; $crate::__private::CONTRACT_LEN] =
            $crate::__private::CONTRACT_BYTES;
    };
}

/// Register a [`Tool`](crate::Tool) implementation as this component's export.
#[macro_export]
macro_rules! export_tool {
    ($ty:ty) => {
        $crate::__stud_export_common!(tool, $crate::Tool, $ty);
        impl __stud_bindings::exports::stud::extension::tool_api::Guest for __StudGlue {
            fn describe() -> $crate::wit::stud::extension::tool_types::ToolSpec {
                $crate::kinds::tool::glue::describe(&__STUD_INSTANCE)
            }
            fn approval_key(args: ::std::string::String) -> $crate::__private::Res<::std::string::String> {
                $crate::kinds::tool::glue::approval_key(&__STUD_INSTANCE, args)
            }
            fn invoke(
                call: $crate::wit::stud::extension::tool_types::CallContext,
                args: ::std::string::String,
            ) -> $crate::__private::Res<$crate::wit::stud::extension::tool_types::ToolOutput> {
                $crate::kinds::tool::glue::invoke(&__STUD_INSTANCE, call, args)
            }
        }
        __stud_bindings::export!(__StudGlue with_types_in __stud_bindings);
    };
}

/// Register a [`Hook`](crate::Hook) implementation.
#[macro_export]
macro_rules! export_hook {
    ($ty:ty) => {
        $crate::__stud_export_common!(hook, $crate::Hook, $ty);
        impl __stud_bindings::exports::stud::extension::hook_api::Guest for __StudGlue {
            fn run(
                slot: $crate::wit::stud::extension::types::HookSlot,
                payload: ::std::string::String,
            ) -> $crate::__private::Res<$crate::wit::stud::extension::hook_types::HookOutcome> {
                $crate::kinds::hook::glue::run(&__STUD_INSTANCE, slot, payload)
            }
        }
        __stud_bindings::export!(__StudGlue with_types_in __stud_bindings);
    };
}

/// Register a [`Provider`](crate::Provider) implementation.
#[macro_export]
macro_rules! export_provider {
    ($ty:ty) => {
        $crate::__stud_export_common!(provider, $crate::Provider, $ty);
        impl __stud_bindings::exports::stud::extension::provider_api::GuestResponseStream
            for $crate::kinds::provider::glue::StreamHandle
        {
            fn next(
                &self,
            ) -> $crate::__private::Res<
                ::std::option::Option<::std::vec::Vec<$crate::kinds::provider::StreamEvent>>,
            > {
                $crate::kinds::provider::glue::StreamHandle::next(self)
            }
        }
        impl __stud_bindings::exports::stud::extension::provider_api::Guest for __StudGlue {
            type ResponseStream = $crate::kinds::provider::glue::StreamHandle;
            fn models() -> ::std::vec::Vec<$crate::kinds::provider::ModelInfo> {
                $crate::kinds::provider::glue::models(&__STUD_INSTANCE)
            }
            fn send(
                req: $crate::kinds::provider::ProviderRequest,
            ) -> $crate::__private::Res<__stud_bindings::exports::stud::extension::provider_api::ResponseStream>
            {
                $crate::kinds::provider::glue::send(&__STUD_INSTANCE, req)
                    .map(__stud_bindings::exports::stud::extension::provider_api::ResponseStream::new)
            }
        }
        __stud_bindings::export!(__StudGlue with_types_in __stud_bindings);
    };
}

/// Register a [`Ui`](crate::Ui) implementation.
#[macro_export]
macro_rules! export_ui {
    ($ty:ty) => {
        $crate::__stud_export_common!(ui, $crate::Ui, $ty);
        $crate::__stud_ui_api_glue!($ty);
        __stud_bindings::export!(__StudGlue with_types_in __stud_bindings);
    };
}

/// The `ui-api` glue shared by [`export_ui!`] and [`export_tui!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __stud_ui_api_glue {
    ($ty:ty) => {
        impl __stud_bindings::exports::stud::extension::ui_api::Guest for __StudGlue {
            fn on_event(event: $crate::wit::stud::extension::types::Event) {
                __STUD_INSTANCE.with(|x| <$ty as $crate::Ui>::on_event(x, event))
            }
            fn on_interaction(
                request: $crate::wit::stud::extension::interaction::InteractionRequest,
            ) -> $crate::wit::stud::extension::interaction::InteractionResponse {
                __STUD_INSTANCE.with(|x| <$ty as $crate::Ui>::on_interaction(x, request))
            }
            fn dismiss(correlation_id: ::std::string::String) {
                __STUD_INSTANCE.with(|x| <$ty as $crate::Ui>::dismiss(x, correlation_id))
            }
            fn read_input() -> ::std::option::Option<::std::string::String> {
                __STUD_INSTANCE.with(|x| <$ty as $crate::Ui>::read_input(x))
            }
        }
    };
}

/// Register a full-screen UI: a [`Ui`](crate::Ui) that is also a
/// [`Screen`](crate::Screen).
#[macro_export]
macro_rules! export_tui {
    ($ty:ty) => {
        $crate::__stud_export_common!(tui, $crate::Ui, $ty);
        $crate::__stud_ui_api_glue!($ty);
        impl __stud_bindings::exports::stud::extension::ui_screen::Guest for __StudGlue {
            fn start(screen: $crate::wit::stud::extension::terminal::ScreenSize) {
                __STUD_INSTANCE.with(|x| <$ty as $crate::Screen>::start(x, screen))
            }
            fn on_input(
                event: $crate::wit::stud::extension::terminal::TermEvent,
            ) -> ::std::vec::Vec<__stud_bindings::exports::stud::extension::ui_screen::UiAction> {
                use __stud_bindings::exports::stud::extension::ui_screen::UiAction as W;
                __STUD_INSTANCE
                    .with(|x| <$ty as $crate::Screen>::on_input(x, event))
                    .into_iter()
                    .map(|a| match a {
                        $crate::UiAction::Submit(t) => W::Submit(t),
                        $crate::UiAction::Steer(t) => W::Steer(t),
                        $crate::UiAction::Interrupt => W::Interrupt,
                        $crate::UiAction::Quit => W::Quit,
                    })
                    .collect()
            }
        }
        __stud_bindings::export!(__StudGlue with_types_in __stud_bindings);
    };
}

/// Register a [`Logger`](crate::Logger) implementation.
#[macro_export]
macro_rules! export_logger {
    ($ty:ty) => {
        $crate::__stud_export_common!(logger, $crate::Logger, $ty);
        impl __stud_bindings::exports::stud::extension::logger_api::Guest for __StudGlue {
            fn sink(event: $crate::wit::stud::extension::types::Event) -> $crate::__private::Res<()> {
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $crate::Logger>::sink(x, event)))
            }
            fn flush() -> $crate::__private::Res<()> {
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $crate::Logger>::flush(x)))
            }
        }
        __stud_bindings::export!(__StudGlue with_types_in __stud_bindings);
    };
}

/// Register a [`ContextProvider`](crate::ContextProvider) implementation.
#[macro_export]
macro_rules! export_context_provider {
    ($ty:ty) => {
        $crate::__stud_export_common!(context_provider, $crate::ContextProvider, $ty);
        impl __stud_bindings::exports::stud::extension::context_provider_api::Guest for __StudGlue {
            fn provide(
                ctx: $crate::ComposeContext,
            ) -> $crate::__private::Res<::std::vec::Vec<$crate::Fragment>> {
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $crate::ContextProvider>::provide(x, ctx)))
            }
        }
        __stud_bindings::export!(__StudGlue with_types_in __stud_bindings);
    };
}

/// Register a [`Command`](crate::Command) implementation.
#[macro_export]
macro_rules! export_command {
    ($ty:ty) => {
        $crate::__stud_export_common!(command, $crate::Command, $ty);
        impl __stud_bindings::exports::stud::extension::command_api::Guest for __StudGlue {
            fn describe() -> $crate::CommandSpec {
                __STUD_INSTANCE.with(|x| <$ty as $crate::Command>::spec(x))
            }
            fn execute(args: $crate::CommandArgs) -> $crate::__private::Res<$crate::CommandOutput> {
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $crate::Command>::execute(x, args)))
            }
        }
        __stud_bindings::export!(__StudGlue with_types_in __stud_bindings);
    };
}

/// Register a [`SessionStore`](crate::SessionStore) implementation.
#[macro_export]
macro_rules! export_session_store {
    ($ty:ty) => {
        $crate::__stud_export_common!(session_store, $crate::SessionStore, $ty);
        impl __stud_bindings::exports::stud::extension::session_store_api::Guest for __StudGlue {
            fn append(
                session_id: ::std::string::String,
                records: ::std::vec::Vec<::std::string::String>,
            ) -> $crate::__private::Res<()> {
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $crate::SessionStore>::append(x, &session_id, records)))
            }
            fn write_manifest(
                session_id: ::std::string::String,
                manifest: ::std::string::String,
            ) -> $crate::__private::Res<()> {
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $crate::SessionStore>::write_manifest(x, &session_id, manifest)))
            }
            fn read(session_id: ::std::string::String) -> $crate::__private::Res<$crate::SessionData> {
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $crate::SessionStore>::read(x, &session_id)))
            }
            fn list() -> $crate::__private::Res<::std::vec::Vec<$crate::SessionSummary>> {
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $crate::SessionStore>::list(x)))
            }
            fn delete(session_id: ::std::string::String) -> $crate::__private::Res<()> {
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $crate::SessionStore>::delete(x, &session_id)))
            }
        }
        __stud_bindings::export!(__StudGlue with_types_in __stud_bindings);
    };
}

/// Register a [`StateMachine`](crate::StateMachine) implementation.
#[macro_export]
macro_rules! export_state_machine {
    ($ty:ty) => {
        $crate::__stud_export_common!(state_machine, $crate::StateMachine, $ty);
        impl __stud_bindings::exports::stud::extension::state_machine_api::Guest for __StudGlue {
            fn stages() -> ::std::vec::Vec<$crate::kinds::state_machine::StageDefinition> {
                __STUD_INSTANCE.with(|x| <$ty as $crate::StateMachine>::stages(x))
            }
            fn entry_stage() -> ::std::string::String {
                __STUD_INSTANCE.with(|x| <$ty as $crate::StateMachine>::entry_stage(x))
            }
            fn setup(stage: ::std::string::String, ctx: ::std::string::String) -> $crate::__private::Res<::std::string::String> {
                let ctx = $crate::__private::wit($crate::__private::parse_json(&ctx))?;
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $crate::StateMachine>::setup(x, &stage, ctx)))
                    .map(|v| v.to_string())
            }
            fn check_gate(stage: ::std::string::String, ctx: ::std::string::String) -> $crate::__private::Res<$crate::kinds::state_machine::Gate> {
                let ctx = $crate::__private::wit($crate::__private::parse_json(&ctx))?;
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $crate::StateMachine>::check_gate(x, &stage, &ctx)))
            }
            fn assert(
                stage: ::std::string::String,
                ctx: ::std::string::String,
                cap_hit: bool,
                completion: ::std::option::Option<::std::string::String>,
            ) -> $crate::__private::Res<$crate::kinds::state_machine::AssertOutcome> {
                let ctx = $crate::__private::wit($crate::__private::parse_json(&ctx))?;
                let completion = match completion {
                    Some(c) => Some($crate::__private::wit($crate::__private::parse_json(&c))?),
                    None => None,
                };
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $crate::StateMachine>::assert(x, &stage, &ctx, cap_hit, completion)))
            }
            fn next(stage: ::std::string::String, ctx: ::std::string::String) -> $crate::__private::Res<$crate::kinds::state_machine::NextResult> {
                let ctx = $crate::__private::wit($crate::__private::parse_json(&ctx))?;
                $crate::__private::wit(__STUD_INSTANCE.with(|x| <$ty as $crate::StateMachine>::next(x, &stage, &ctx)))
            }
            fn grant_stage_tool(
                proposal: $crate::kinds::state_machine::ToolProposal,
            ) -> $crate::kinds::state_machine::ToolVerdict {
                __STUD_INSTANCE.with(|x| <$ty as $crate::StateMachine>::grant_stage_tool(x, proposal))
            }
        }
        __stud_bindings::export!(__StudGlue with_types_in __stud_bindings);
    };
}
