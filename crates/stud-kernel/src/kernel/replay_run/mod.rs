//! Running a replay: the recording's prompts through a session launched
//! with its [`Replayer`](super::replay::Replayer) ([`drive`]), and the
//! throwaway copy a `--live-tools` replay works in ([`copy`]).

pub mod copy;
pub mod drive;
