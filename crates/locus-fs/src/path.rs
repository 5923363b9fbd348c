//! Logical paths: absolute, normalised, and unable to leave the namespace.

use locus_proto::{Errno, FsError, FsResult};

const MAX_PATH: usize = 4096;
const MAX_NAME: usize = 255;

/// Normalises an absolute path: repeated and trailing `/` and `.` components
/// are dropped; `..` is refused, so no path can climb out of a store directory.
pub fn normalise(path: &str) -> FsResult<String> {
    let invalid = |why: &str| FsError::new(Errno::EINVAL, path).with_detail(why);
    if !path.starts_with('/') {
        return Err(invalid("paths must be absolute"));
    }
    if path.len() > MAX_PATH {
        return Err(invalid("path too long"));
    }
    if path.contains('\0') {
        return Err(invalid("path contains a NUL byte"));
    }
    let mut out = String::with_capacity(path.len());
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(invalid("'..' may not appear in a path")),
            name if name.len() > MAX_NAME => return Err(invalid("file name too long")),
            name => {
                out.push('/');
                out.push_str(name);
            }
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    Ok(out)
}

/// Splits a normalised path other than `/` into its parent and last name.
pub fn split(path: &str) -> FsResult<(&str, &str)> {
    if path == "/" {
        return Err(FsError::new(Errno::EINVAL, path).with_detail("the root has no parent"));
    }
    let cut = path.rfind('/').expect("normalised paths are absolute");
    Ok((locus_proto::fs::parent(path), &path[cut + 1..]))
}

pub use locus_proto::fs::join;

/// Accepts a path from the wire only if it is already normalised, so a peer
/// cannot name anything outside a store directory.
pub fn checked(path: &str) -> FsResult<&str> {
    if normalise(path)? == path {
        Ok(path)
    } else {
        Err(FsError::new(Errno::EINVAL, path).with_detail("path is not normalised"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_slashes_and_dots() {
        assert_eq!(normalise("/").unwrap(), "/");
        assert_eq!(normalise("//a//b/./c/").unwrap(), "/a/b/c");
        assert_eq!(normalise("/a/.").unwrap(), "/a");
    }

    #[test]
    fn refuses_escape_and_relative_paths() {
        assert_eq!(normalise("/a/../../etc").unwrap_err().code, Errno::EINVAL);
        assert_eq!(normalise("/..").unwrap_err().code, Errno::EINVAL);
        assert_eq!(normalise("a/b").unwrap_err().code, Errno::EINVAL);
        assert_eq!(normalise("/a\0b").unwrap_err().code, Errno::EINVAL);
    }

    #[test]
    fn splits_and_joins() {
        assert_eq!(split("/a").unwrap(), ("/", "a"));
        assert_eq!(split("/a/b/c").unwrap(), ("/a/b", "c"));
        assert!(split("/").is_err());
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
    }
}
