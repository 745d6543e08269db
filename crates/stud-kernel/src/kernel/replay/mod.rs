//! Deterministic replay (`stud session replay`): a session's trace (what
//! it kept of each turn, [`trace`]) drives a new session with the current
//! or substituted extensions and no provider: each request is answered
//! with the response recorded for a request with the same digest
//! ([`replayer`]), tools that write or execute give their recorded results
//! unless `--live-tools`, questions get the recorded answers. What the
//! replay's own trace then says differently is the report ([`compare`]).
//! Running a replay session is [`super::replay_run`]'s: this module sits
//! below the session, since the bus and the act stages record into it.

pub mod compare;
pub mod divergence;
pub mod replayer;
pub mod stream_json;
pub mod trace;

pub use divergence::Divergence;
pub use replayer::Replayer;
pub use trace::Trace;
