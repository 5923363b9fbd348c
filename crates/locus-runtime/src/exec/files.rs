//! Swift file paths: those under the Locus prefix are Locus files, the rest
//! are host files used as they are (DESIGN.md).

/// Where the Locus namespace appears in Swift paths (and, later, the FUSE
/// mount point).
pub const LOCUS_PREFIX: &str = "/locus";

/// The file-system path of a Locus file (`/locus/a/b` → `/a/b`), or `None`
/// for a host file.
pub fn fs_path(swift_path: &str) -> Option<&str> {
    let rest = swift_path.strip_prefix(LOCUS_PREFIX)?;
    rest.starts_with('/').then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locus_paths_map_into_the_namespace() {
        assert_eq!(fs_path("/locus/a/b.txt"), Some("/a/b.txt"));
        assert_eq!(fs_path("/locusx/a"), None);
        assert_eq!(fs_path("/tmp/a"), None);
    }
}
