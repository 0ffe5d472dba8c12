//! Small enums a caller picks by name (`--mode fts`, `"format": "csv"`): one list of names
//! per enum, which the CLI's parser, MCP's argument schema and every rendering share.

/// An enum chosen by name. `NAMES` lists every variant once, in the order help shows them.
pub trait Choice: Copy + PartialEq + Send + Sync + 'static {
    const NAMES: &'static [(&'static str, Self)];
    /// The name of the type in a JSON schema (`$defs`).
    const SCHEMA_NAME: &'static str;

    /// The name this value is chosen by.
    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, v)| *v == self)
            .map(|(n, _)| *n)
            .expect("every variant is named in NAMES")
    }

    /// The value of a name, if it names one.
    fn named(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Format;

    #[test]
    fn every_name_is_one_variant_and_back() {
        for (name, v) in Format::NAMES {
            assert_eq!(v.name(), *name);
            assert_eq!(Format::named(name), Some(*v));
        }
        assert_eq!(Format::named("yaml"), None);
        assert_eq!(Format::named("Table"), None, "names are exact");
    }
}
