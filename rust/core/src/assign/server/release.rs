//! Which Apache Kafka release's assignor code to follow where releases compute differently.
//!
//! So far they differ in one place: from 4.1.0 the homogeneous `uniform` builder lets a member
//! whose kept partitions leave it below its quota give up its extra partition while more members
//! remain (itself included) than extras to hand out, so the extras go to members that already
//! hold partitions, else to the last members in order (checked against the 4.0.0, 4.1.0, 4.2.0,
//! 4.3.0 and 4.4.0 jars).
//!
//! ```
//! use mqbalance_core::assign::server::KafkaRelease;
//! let r = KafkaRelease::parse("4.0.2").unwrap();
//! assert!(!r.uniform_extras_to_holders());
//! assert!(KafkaRelease::parse("4.1").unwrap().uniform_extras_to_holders());
//! assert_eq!(KafkaRelease::parse("four"), None);
//! ```

/// A Kafka release, `major.minor` (the patch level never changed an assignor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct KafkaRelease {
    /// Major version.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
}

impl KafkaRelease {
    /// The newest release checked against its jars (the default).
    pub const NEWEST: KafkaRelease = KafkaRelease { major: 4, minor: 4 };

    /// `"4.1"`, `"4.1.0"` or `"3.9.1"`: digits separated by dots, two or three parts.
    pub fn parse(text: &str) -> Option<Self> {
        let parts: Vec<&str> = text.split('.').collect();
        if !(2..=3).contains(&parts.len())
            || parts
                .iter()
                .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
        {
            return None;
        }
        Some(KafkaRelease {
            major: parts[0].parse().ok()?,
            minor: parts[1].parse().ok()?,
        })
    }

    /// Whether homogeneous `uniform` gives unheld extras up to holders (4.1.0 and later).
    pub fn uniform_extras_to_holders(self) -> bool {
        self >= KafkaRelease { major: 4, minor: 1 }
    }
}
