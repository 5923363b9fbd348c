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

/// A path as scripts write it (`/locus/a/b`) or as the file system names
/// it (`/a/b`): both mean `/a/b`, so a path can be pasted from a script.
pub fn namespace_path(s: &str) -> &str {
    match fs_path(s) {
        Some(p) => p,
        None if s == LOCUS_PREFIX => "/",
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locus_paths_map_into_the_namespace() {
        assert_eq!(fs_path("/locus/a/b.txt"), Some("/a/b.txt"));
        assert_eq!(fs_path("/locusx/a"), None);
        assert_eq!(namespace_path("/locus/a"), "/a");
        assert_eq!(namespace_path("/locus"), "/");
        assert_eq!(namespace_path("/a/b"), "/a/b");
        assert_eq!(fs_path("/tmp/a"), None);
    }
}
