//! Swift types.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Type {
    Int,
    Float,
    String,
    Bool,
    Void,
    File,
    Location,
    Blob,
    /// `HARD` / `SOFT`.
    Strictness,
    /// `RANK` / `NODE`.
    Accuracy,
    Array {
        key: Box<Type>,
        elem: Box<Type>,
    },
    Struct(String),
    /// `type name base;`: a subtype of `base`, given where a `base` is
    /// wanted but not the other way round (`name(v)` converts). Only the
    /// front end tells it apart: the IR has its base.
    Sub {
        name: String,
        base: Box<Type>,
    },
    /// A type variable of a definition over any type (`<T> (T o) f(T i)`):
    /// in its body, a type of its own that only itself is given for; at a
    /// call, bound to what the arguments give.
    Var(String),
    /// `updateable_float`: a float changed in place (`x <incr> := v`) until
    /// every statement that may change it is done; read, it is its value
    /// now.
    Updateable,
    /// Stands for a type already reported as wrong, to avoid cascades.
    Error,
}

impl Type {
    pub fn array_of(elem: Type) -> Type {
        Type::Array {
            key: Box::new(Type::Int),
            elem: Box::new(elem),
        }
    }

    pub fn is_array(&self) -> bool {
        matches!(self, Type::Array { .. })
    }

    /// Whether a value of type `from` may be given where `self` is expected.
    /// (`Error` also stands for a type variable's any type, at any depth.)
    /// A subtype's value is its base's, not the other way round.
    pub fn accepts(&self, from: &Type) -> bool {
        match (self, from) {
            (Type::Error, _) | (_, Type::Error) => true,
            (Type::Array { key, elem }, Type::Array { key: k, elem: e }) => {
                key.accepts(k) && elem.accepts(e)
            }
            _ if self == from => true,
            (_, Type::Sub { base, .. }) => self.accepts(base),
            _ => false,
        }
    }

    /// The type a subtype's values have (itself for any other type).
    pub fn base(&self) -> &Type {
        match self {
            Type::Sub { base, .. } => base.base(),
            t => t,
        }
    }

    /// This type with every subtype in it replaced by its base and every
    /// type variable by any type: what the IR and the runtime see.
    pub fn erased(&self) -> Type {
        match self {
            Type::Sub { base, .. } => base.erased(),
            Type::Var(_) => Type::Error,
            Type::Array { key, elem } => Type::Array {
                key: Box::new(key.erased()),
                elem: Box::new(elem.erased()),
            },
            t => t.clone(),
        }
    }

    pub fn is_numeric(&self) -> bool {
        matches!(self.base(), Type::Int | Type::Float | Type::Error)
    }

    /// Whether a `from` may be given where `self`, which may hold type
    /// variables, is expected; binds those not bound yet in `bound` to what
    /// `from` gives for them.
    pub fn binds(&self, from: &Type, bound: &mut std::collections::HashMap<String, Type>) -> bool {
        match (self, from) {
            (Type::Var(v), _) => match bound.get(v) {
                Some(t) => t.accepts(from),
                None => {
                    bound.insert(v.clone(), from.clone());
                    true
                }
            },
            (Type::Array { key, elem }, Type::Array { key: k, elem: e }) => {
                key.binds(k, bound) && elem.binds(e, bound)
            }
            _ => self.accepts(from),
        }
    }

    /// This type with the type variables `bound` holds replaced (the others
    /// by any type).
    pub fn bound(&self, bound: &std::collections::HashMap<String, Type>) -> Type {
        match self {
            Type::Var(v) => bound.get(v).cloned().unwrap_or(Type::Error),
            Type::Array { key, elem } => Type::Array {
                key: Box::new(key.bound(bound)),
                elem: Box::new(elem.bound(bound)),
            },
            t => t.clone(),
        }
    }

    /// The names a user may write for a primitive type.
    pub fn primitive(name: &str) -> Option<Type> {
        Some(match name {
            "int" => Type::Int,
            "float" => Type::Float,
            "string" => Type::String,
            "boolean" => Type::Bool,
            "void" => Type::Void,
            "file" => Type::File,
            "location" => Type::Location,
            "blob" => Type::Blob,
            "updateable_float" => Type::Updateable,
            // A URL is passed to programs as its text.
            "url" => Type::String,
            // An ordering signal between leaf functions, as `void`.
            "external" => Type::Void,
            _ => return None,
        })
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Int => f.write_str("int"),
            Type::Float => f.write_str("float"),
            Type::String => f.write_str("string"),
            Type::Bool => f.write_str("boolean"),
            Type::Void => f.write_str("void"),
            Type::File => f.write_str("file"),
            Type::Location => f.write_str("location"),
            Type::Blob => f.write_str("blob"),
            Type::Strictness => f.write_str("strictness (HARD|SOFT)"),
            Type::Accuracy => f.write_str("accuracy (RANK|NODE)"),
            Type::Array { key, elem } => {
                if **key == Type::Int {
                    write!(f, "{elem}[]")
                } else {
                    write!(f, "{elem}[{key}]")
                }
            }
            Type::Struct(n) | Type::Sub { name: n, .. } | Type::Var(n) => f.write_str(n),
            Type::Updateable => f.write_str("updateable_float"),
            Type::Error => f.write_str("<error>"),
        }
    }
}
