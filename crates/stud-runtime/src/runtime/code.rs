//! An extension's machine code, made when it is first needed. Loading an
//! extension checks everything that can refuse it (integrity, contract,
//! imports against grants, config); reading the compiled code (or
//! compiling it) and linking it wait for the first call, so a session pays
//! only for the extensions it uses. A failure is kept: the next call gets
//! the same error without compiling again.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use wasmtime::component::InstancePre;

use super::Runtime;
use super::cache::CodeSource;
use super::contract::v0_1::exports::stud::extension as ex;
use super::error::LoadError;
use super::extension::KindIndices;
use super::host_state::HostState;
use super::inspect::ComponentInfo;
use super::load::{check_integrity, verify};
use crate::digest::Sha256Digest;
use crate::manifest::{ExtensionId, Kind, Manifest};
use std::path::PathBuf;

/// A component's bytes: borrowed from the binary for bundled extensions
/// (never copied), shared otherwise.
#[derive(Clone)]
pub enum ComponentBytes {
    Embedded(&'static [u8]),
    Shared(Arc<[u8]>),
}

impl Deref for ComponentBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            ComponentBytes::Embedded(b) => b,
            ComponentBytes::Shared(b) => b,
        }
    }
}

impl ComponentBytes {
    /// Their sha256. Embedded bytes are read through
    /// [`stud_native::resident::read_once`]: once the check has read them,
    /// their pages leave the process's resident size.
    pub fn sha256(&self) -> Sha256Digest {
        match self {
            ComponentBytes::Embedded(b) => {
                let mut hasher = sha2::Sha256::default();
                stud_native::resident::read_once(b, |chunk| {
                    sha2::Digest::update(&mut hasher, chunk);
                });
                Sha256Digest::finish(hasher)
            }
            ComponentBytes::Shared(b) => Sha256Digest::of(b),
        }
    }
}

impl From<Vec<u8>> for ComponentBytes {
    fn from(v: Vec<u8>) -> Self {
        ComponentBytes::Shared(v.into())
    }
}

/// What linking needs: the verified bytes and what the linker is chosen by.
pub(crate) struct CodeInput {
    pub id: ExtensionId,
    pub kind: Kind,
    /// The linker for its world and grants.
    pub link_key: super::LinkerKey,
    pub bytes: ComponentBytes,
    /// The digest the bytes have (checked at load), or must have (checked
    /// here, for a bundled component: see [`DeferredCheck`]).
    pub digest: Sha256Digest,
    pub deferred: Option<DeferredCheck>,
}

/// The checks of a bundled component, made when it is first used: its
/// bytes must have the digest recorded at build time, and pass the same
/// contract and import checks as any other.
pub(crate) struct DeferredCheck {
    pub manifest: Manifest,
    pub path: PathBuf,
}

/// The linked component: ready to instantiate.
pub(crate) struct Linked {
    /// What the deferred checks found (`None`: checked at load).
    pub info: Option<ComponentInfo>,
    pub pre: InstancePre<HostState>,
    pub indices: KindIndices,
    pub lifecycle: ex::lifecycle::GuestIndices,
    pub source: CodeSource,
}

/// The code of one extension, linked once on first use.
pub(crate) struct LazyCode {
    input: CodeInput,
    /// The error is the [`LoadError`]'s message (it names the extension).
    cell: OnceLock<Result<Arc<Linked>, String>>,
    /// A link lane took on linking it ahead (it is queued there, or being
    /// linked): another lane need not start for it, and a first call
    /// waits for that lane rather than start a thread to wait on.
    claimed: AtomicBool,
    /// Woken when a link ends (or a claim is given up).
    settled: tokio::sync::Notify,
}

impl LazyCode {
    pub fn new(input: CodeInput) -> Self {
        LazyCode {
            input,
            cell: OnceLock::new(),
            claimed: AtomicBool::new(false),
            settled: tokio::sync::Notify::new(),
        }
    }

    /// Take on linking it ahead; `false` when it is linked already or
    /// another caller took it on (queued, or linking now).
    pub fn claim(&self) -> bool {
        self.cell.get().is_none() && !self.claimed.swap(true, Ordering::AcqRel)
    }

    /// Give a claim up without linking (the lane that had it will not
    /// run): a call waiting for it links it itself.
    pub fn release(&self) {
        self.claimed.store(false, Ordering::Release);
        self.settled.notify_waiters();
    }

    pub fn bytes(&self) -> &[u8] {
        &self.input.bytes
    }

    /// Linked already (or failed to link)?
    pub fn get(&self) -> Option<&Result<Arc<Linked>, String>> {
        self.cell.get()
    }

    /// Link now, blocking this thread (a blocking-pool thread or a
    /// synchronous caller); concurrent callers wait for the one linking.
    pub fn link_blocking(&self, runtime: &Runtime) -> Result<Arc<Linked>, String> {
        // Waiters are woken however this ends; a link that panicked gives
        // its claim up, so they link it themselves.
        struct Settle<'a>(&'a LazyCode);
        impl Drop for Settle<'_> {
            fn drop(&mut self) {
                if self.0.cell.get().is_none() {
                    self.0.claimed.store(false, Ordering::Release);
                }
                self.0.settled.notify_waiters();
            }
        }
        let _settle = Settle(self);
        self.cell
            .get_or_init(|| {
                link(runtime, &self.input)
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
    }

    /// The outcome of a link a lane took on, once it is there; `None` when
    /// no lane has it (the caller links it).
    pub async fn claimed_outcome(&self) -> Option<Result<Arc<Linked>, String>> {
        loop {
            // Registered before the checks, so a link that ends between
            // them still wakes this one.
            let settled = self.settled.notified();
            if let Some(done) = self.cell.get() {
                return Some(done.clone());
            }
            if !self.claimed.load(Ordering::Acquire) {
                return None;
            }
            settled.await;
        }
    }
}

/// Read the cached code (or compile), then link it against the world and
/// grants of the extension.
fn link(runtime: &Runtime, input: &CodeInput) -> Result<Linked, LoadError> {
    let id = &input.id;
    let info = match &input.deferred {
        Some(check) => {
            let expected = Some(input.digest.clone());
            tracing::trace_span!("integrity", ext = %id).in_scope(|| {
                check_integrity(&check.manifest, &input.bytes, &expected, &check.path)
            })?;
            Some(
                tracing::trace_span!("verify", ext = %id)
                    .in_scope(|| verify(&check.manifest, &input.bytes, &check.path))?,
            )
        }
        None => None,
    };
    let compile = tracing::trace_span!("code", ext = %id, source = tracing::field::Empty);
    let native = match &input.deferred {
        Some(_) => compile.in_scope(|| runtime.cache.native(&runtime.engine, &input.digest)),
        None => None,
    };
    let loaded = match native {
        Some(component) => Ok((component, CodeSource::Native)),
        None => compile.in_scope(|| {
            runtime
                .cache
                .load(&runtime.engine, &input.bytes, &input.digest)
        }),
    };
    let (component, source) = loaded.map_err(|e| LoadError::Compile {
        id: id.clone(),
        message: format!("{e:#}"),
    })?;
    compile.record("source", source.as_str());
    drop(compile);
    let _link = tracing::trace_span!("link", ext = %id).entered();
    let failed = |e: wasmtime::Error| LoadError::Link {
        id: id.clone(),
        message: format!("{e:#}"),
    };
    let linker = runtime.linker(input.link_key.clone()).map_err(failed)?;
    let pre = linker.instantiate_pre(&component).map_err(failed)?;
    let (indices, lifecycle) = KindIndices::new(input.kind, &pre).map_err(failed)?;
    Ok(Linked {
        info,
        pre,
        indices,
        lifecycle,
        source,
    })
}
