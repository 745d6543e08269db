//! Phase 1: what the settings, the profile and the command line choose
//! (nothing is loaded yet).

use std::collections::BTreeMap;

use super::{LaunchError, LaunchOptions};
use crate::config::{ExtensionConfigs, Layered, Profile, Settings};
use crate::extensions::UserGrants;
use crate::kernel::authority::Reach;
use crate::kernel::extension_set::ExtensionSet;
use crate::kernel::{AllowPattern, Mode};

/// The settings read and what they choose.
pub(super) struct Configured {
    pub settings: Settings,
    /// JSON pointer of each setting -> the file that set it.
    pub provenance: BTreeMap<String, String>,
    /// Global config per extension, for one whose project config fails.
    pub global_configs: ExtensionConfigs,
    /// `ordering.hooks` of the global file alone.
    pub global_hook_order: Vec<String>,
    pub grants: UserGrants,
    /// Problems with the grants, reported after discovery's.
    pub grant_warnings: Vec<String>,
    /// The extension set the command line or a profile chose.
    pub chosen_set: Option<ExtensionSet>,
    pub mode: Mode,
    pub allowlist: Vec<AllowPattern>,
    /// This run chose a mode itself (a flag, or a profile naming one); if
    /// not, a resumed session keeps its recorded profile's.
    pub mode_asked: bool,
}

pub(super) fn configure(
    opts: &LaunchOptions,
    warnings: &mut Vec<String>,
) -> Result<Configured, LaunchError> {
    let layered = tracing::debug_span!("settings").in_scope(|| {
        Layered::load(
            &opts.home.settings_file(),
            opts.project.settings_layer().as_ref(),
        )
    })?;
    let (grants, grant_warnings) = UserGrants::from_layers(&layered);
    let Layered {
        settings,
        provenance,
        global_configs,
        project_allowlist,
        global_hook_order,
        warnings: layer_warnings,
        ..
    } = layered;
    warnings.extend(layer_warnings);
    let chosen_set = ExtensionSet::resolve(&opts.set, &settings)?;
    let profile = chosen_set.as_ref().map(|s| &s.choice);
    let (mode, allowlist) = security(opts, &settings, profile, &project_allowlist)?;
    let mode_asked = opts.yolo || opts.mode.is_some() || profile.is_some_and(|p| p.mode.is_some());
    Ok(Configured {
        settings,
        provenance,
        global_configs,
        global_hook_order,
        grants,
        grant_warnings,
        chosen_set,
        mode,
        allowlist,
        mode_asked,
    })
}

/// The profile of an extension set.
pub(super) fn profile_of(set: &Option<ExtensionSet>) -> Option<&Profile> {
    set.as_ref().map(|s| &s.choice)
}

/// The security mode and allowlist: flags over the profile over settings.
/// The mode and the allowlist. Entries of the user's global settings
/// reach only the user's own tools ([`Reach::Own`]); an accepted project's
/// entries and `--allow` reach any tool of the session.
fn security(
    opts: &LaunchOptions,
    settings: &Settings,
    profile: Option<&Profile>,
    project_allowlist: &[String],
) -> Result<(Mode, Vec<AllowPattern>), LaunchError> {
    let from_profile = match profile.and_then(|p| p.mode.as_deref()) {
        Some(m) => Some(
            m.parse::<Mode>()
                .map_err(|e| LaunchError::Mode(format!("profile: {e}")))?,
        ),
        None => None,
    };
    let mode = if opts.yolo {
        Mode::Yolo
    } else {
        match (opts.mode.or(from_profile), &settings.security_mode) {
            (Some(m), _) => m,
            (None, Some(s)) => match &s.mode {
                Some(m) => m.parse().map_err(LaunchError::Mode)?,
                None => Mode::Ask,
            },
            (None, None) => Mode::Ask,
        }
    };
    let configured = settings
        .security_mode
        .as_ref()
        .map(|s| s.allowlist.as_slice())
        .unwrap_or_default();
    let reach = |t: &String| {
        if project_allowlist.contains(t) {
            Reach::Any
        } else {
            Reach::Own
        }
    };
    let allowlist = configured
        .iter()
        .map(|t| (t, reach(t)))
        .chain(opts.allow.iter().map(|t| (t, Reach::Any)))
        .map(|(t, r)| AllowPattern::parse(t).map(|p| p.reaching(r)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(LaunchError::Allowlist)?;
    Ok((mode, allowlist))
}

/// What a resumed session's run asks for: what it chose itself, else
/// the mode of the profile the session was recorded with (`-c` keeps a
/// profile), else the settings' (`asked`).
pub(super) fn resumed_mode(
    asked: Mode,
    chosen_here: bool,
    set: &Option<ExtensionSet>,
) -> Result<Mode, LaunchError> {
    match set.as_ref().and_then(|s| s.choice.mode.as_deref()) {
        Some(m) if !chosen_here => m
            .parse::<Mode>()
            .map_err(|e| LaunchError::Mode(format!("the resumed session's profile: {e}"))),
        _ => Ok(asked),
    }
}
