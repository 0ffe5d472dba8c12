//! The CPU's vector units, probed once: which int8 kernel runs here (and so which f32
//! kernels, `f32k`, follow it). `POND_EMBED_KERNEL=avx2|portable` forces a narrower one.

/// The kernel this CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    Avx512Vnni,
    Avx2,
    Portable,
}

impl Kernel {
    pub fn detect() -> Kernel {
        static KERNEL: std::sync::OnceLock<Kernel> = std::sync::OnceLock::new();
        *KERNEL.get_or_init(|| {
            let forced = std::env::var("POND_EMBED_KERNEL").ok();
            #[cfg(target_arch = "x86_64")]
            {
                let vnni = is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
                    && is_x86_feature_detected!("avx512vnni");
                let avx2 = is_x86_feature_detected!("avx2");
                match forced.as_deref() {
                    Some("portable") => return Kernel::Portable,
                    Some("avx2") if avx2 => return Kernel::Avx2,
                    _ => {}
                }
                if vnni {
                    return Kernel::Avx512Vnni;
                }
                if avx2 {
                    return Kernel::Avx2;
                }
            }
            let _ = forced;
            Kernel::Portable
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Kernel::Avx512Vnni => "avx512-vnni",
            Kernel::Avx2 => "avx2",
            Kernel::Portable => "portable",
        }
    }
}
