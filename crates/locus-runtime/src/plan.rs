//! Blocks prepared once per program: their statements, which declared
//! variables each statement writes (the writers a container waits for before
//! it closes), and their nested blocks. Running a block, however many times,
//! then copies and analyses nothing.

use locus_lang::ir::{Stmt, VarId};
use std::collections::HashMap;
use std::sync::Arc;

pub struct Block {
    pub stmts: Vec<Stmt>,
    /// For each statement, the variables declared in this block it writes.
    pub written: Vec<Vec<VarId>>,
    /// For each variable declared in this block, how many statements write it.
    pub writers: HashMap<VarId, usize>,
    /// For each statement, its nested blocks in the order of [`nested`].
    pub nested: Vec<Vec<Arc<Block>>>,
}

/// The blocks inside a statement: `if` then/else; `switch` cases then
/// default; a loop's body; `for` cond/body/next; `wait` body; `=>` parts.
fn nested(s: &Stmt) -> Vec<&[Stmt]> {
    match s {
        Stmt::If {
            then, otherwise, ..
        } => vec![then, otherwise],
        Stmt::Switch { cases, default, .. } => cases
            .iter()
            .map(|(_, b)| b.as_slice())
            .chain([default.as_slice()])
            .collect(),
        Stmt::ForeachArray { body, .. }
        | Stmt::ForeachRange { body, .. }
        | Stmt::Wait { body, .. } => {
            vec![body]
        }
        Stmt::Loop {
            cond, body, next, ..
        } => vec![cond, body, next],
        Stmt::Seq(parts) => parts.iter().map(Vec::as_slice).collect(),
        _ => Vec::new(),
    }
}

/// Whether `s` (or anything nested in it) writes variable `v`.
fn writes(s: &Stmt, v: VarId) -> bool {
    let direct = match s {
        Stmt::Const { dst, .. }
        | Stmt::Op { dst, .. }
        | Stmt::Copy { dst, .. }
        | Stmt::ArrayGet { dst, .. }
        | Stmt::StructGet { dst, .. } => *dst == v,
        Stmt::Call { outs, .. } => outs.contains(&v),
        Stmt::ArrayInsert { array, .. } => *array == v,
        Stmt::StructSet { target, .. } => *target == v,
        _ => false,
    };
    direct || nested(s).iter().any(|b| b.iter().any(|s| writes(s, v)))
}

pub fn plan(stmts: &[Stmt]) -> Arc<Block> {
    let declared: Vec<VarId> = stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Decl { var, .. } => Some(*var),
            _ => None,
        })
        .collect();
    let written: Vec<Vec<VarId>> = stmts
        .iter()
        .map(|s| declared.iter().copied().filter(|v| writes(s, *v)).collect())
        .collect();
    let mut writers: HashMap<VarId, usize> = declared.iter().map(|v| (*v, 0)).collect();
    for v in written.iter().flatten() {
        *writers.get_mut(v).expect("declared here") += 1;
    }
    Arc::new(Block {
        stmts: stmts.to_vec(),
        written,
        writers,
        nested: stmts
            .iter()
            .map(|s| nested(s).into_iter().map(plan).collect())
            .collect(),
    })
}
