//! Host bindings for contract 0.1.x (`wit/since_v0.1.4`): the generated
//! types and traits of this version. Only the runtime (its kinds and
//! capabilities, the adapter for this version) names them; the kernel uses
//! [`crate::runtime::domain`].
//!
//! One `bindgen!` over a host-only world that includes every kind's world,
//! so imports and shared types are generated once. Each kind's exports are
//! looked up per component through the generated per-interface `Guest`
//! structs; imports are linked per interface, which is what lets the linker
//! leave out capabilities an extension was not granted.
//!
//! When contract 0.2 arrives, `v0_2.rs` is generated beside this one,
//! `domain` follows it, and this module gains the conversions from its
//! types into the domain's (see `contract/mod.rs`).

wasmtime::component::bindgen!({
    path: "../../wit/since_v0.1.4",
    inline: "
        package stud:host;

        world superset {
            include stud:extension/provider@0.1.4;
            include stud:extension/tool@0.1.4;
            include stud:extension/hook@0.1.4;
            include stud:extension/tui@0.1.4;
            include stud:extension/logger@0.1.4;
            include stud:extension/context-provider@0.1.4;
            include stud:extension/state-machine@0.1.4;
            include stud:extension/command@0.1.4;
            include stud:extension/session-store@0.1.4;
        }
    ",
    world: "stud:host/superset",
    imports: { default: async | trappable },
    exports: { default: async },
    with: {
        "stud:extension/http.response": crate::runtime::caps::http::HttpResponse,
        "stud:extension/files.walk": crate::runtime::caps::files::FileWalk,
        "stud:extension/socket.connection": crate::runtime::caps::socket::Connection,
    },
});
