//! The functions of the C math library the binary calls (dependencies'
//! `f64::powf` and `f64::log2`), provided here so the dynamic loader does
//! not map `libm.so.6` at every start (issue 42, docs/benchmarks.md).
//! The implementations are the `libm` crate's (musl's, which Rust's own
//! `compiler_builtins` uses): within one unit in the last place, as
//! glibc's. Should a dependency start calling another, the library is
//! loaded again as before; `tests/link.rs` says which.

/// C's `pow`; the linker binds the binary's calls to it instead of
/// `libm.so.6`'s, and with `--as-needed` then leaves that library out.
#[unsafe(no_mangle)]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

/// C's `log2`, as [`pow`].
#[unsafe(no_mangle)]
pub extern "C" fn log2(x: f64) -> f64 {
    libm::log2(x)
}

#[cfg(test)]
mod tests {
    #[test]
    fn they_agree_with_the_standard_library() {
        for (x, y) in [
            (2.0, 10.0),
            (1.7, 3.3),
            (10.0, -2.0),
            (0.5, 0.5),
            (-2.0, 3.0),
        ] {
            let ours = super::pow(x, y);
            let std = f64::powf(x, y);
            assert!(
                (ours - std).abs() <= std.abs() * 4.0 * f64::EPSILON,
                "{x}^{y}"
            );
        }
        for x in [1.0, 2.0, 3.0, 1e-300, 1e300, 0.1] {
            let (ours, std) = (super::log2(x), f64::log2(x));
            assert!(
                (ours - std).abs() <= std.abs() * 4.0 * f64::EPSILON,
                "log2 {x}"
            );
        }
        assert!(super::pow(-1.0, 0.5).is_nan());
        assert_eq!(super::pow(0.0, 0.0), 1.0);
    }
}
