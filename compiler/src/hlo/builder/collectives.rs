//! Collectives across replicas: all-reduce, all-gather, reduce-scatter, all-to-all,
//! collective-permute, and the replica and partition ids.
//!
//! `replica_groups` lists the groups of replicas that communicate; empty means one group of
//! all replicas.

use super::{build_error, At, Builder, Op};
use crate::error::Result;
use crate::hlo::attributes::Attributes;
use crate::hlo::opcode::Opcode;
use hlojit_runtime::Shape;
use std::panic::Location;

fn groups_attr(groups: &[Vec<i64>]) -> Option<Vec<Vec<i64>>> {
    Some(groups.to_vec())
}

impl Builder {
    /// Combines `operand` across the replicas of each group with `reducer` (a scalar
    /// reduction: `p[0]`, `p[1]` to one value); every replica gets the result.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("m");
    /// let g = b.parameter(0, Shape::array(F32, [16]), "grad")?;
    /// let sum = b.all_reduce(&g, &[], |r, p| r.add(&p[0], &p[1]))?;
    /// assert_eq!(sum.dims(), &[16]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn all_reduce(
        &self,
        operand: &Op,
        replica_groups: &[Vec<i64>],
        reducer: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<Op> {
        let at = Location::caller();
        let op = Opcode::AllReduce;
        self.check_operands(at, op, &[operand])?;
        let scalar = self.element_scalars(at, op, "operand", &[operand])?.remove(0);
        let region = self.region(at, "reducer", &[scalar.clone(), scalar], reducer)?;
        let attrs = Attributes { replica_groups: groups_attr(replica_groups), ..Attributes::default() };
        self.emit(at, op, &[operand], attrs, &[region], None)
    }

    /// The sum of `operand` across replicas (XLA's `CrossReplicaSum`).
    #[track_caller]
    pub fn cross_replica_sum(&self, operand: &Op, replica_groups: &[Vec<i64>]) -> Result<Op> {
        let at = Location::caller();
        let op = Opcode::AllReduce;
        self.check_operands(at, op, &[operand])?;
        let scalar = self.element_scalars(at, op, "operand", &[operand])?.remove(0);
        let region = self.region(at, "sum", &[scalar.clone(), scalar], |r, p| r.add(&p[0], &p[1]))?;
        let attrs = Attributes { replica_groups: groups_attr(replica_groups), ..Attributes::default() };
        self.emit(at, op, &[operand], attrs, &[region], None)
    }

    /// Concatenates `operand` from the `shard_count` replicas of each group along `dimension`,
    /// in group order.
    #[track_caller]
    pub fn all_gather(
        &self,
        operand: &Op,
        dimension: i64,
        shard_count: i64,
        replica_groups: &[Vec<i64>],
    ) -> Result<Op> {
        let at = Location::caller();
        let op = Opcode::AllGather;
        self.check_group_size(at, op, shard_count, replica_groups)?;
        let mut declared = self.array_operand(at, op, "the operand", operand)?.clone();
        if let Some(d) = usize::try_from(dimension).ok().filter(|&d| d < declared.rank()) {
            declared.dims[d] *= shard_count;
        }
        let attrs = Attributes {
            dimensions: Some(vec![dimension]),
            replica_groups: groups_attr(replica_groups),
            ..Attributes::default()
        };
        self.emit(at, op, &[operand], attrs, &[], Some(&Shape::Array(declared)))
    }

    /// All-reduces with `reducer`, then each of the `shard_count` replicas of a group keeps
    /// its block of `dimension`.
    #[track_caller]
    pub fn reduce_scatter(
        &self,
        operand: &Op,
        dimension: i64,
        shard_count: i64,
        replica_groups: &[Vec<i64>],
        reducer: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<Op> {
        let at = Location::caller();
        let op = Opcode::ReduceScatter;
        self.check_operands(at, op, &[operand])?;
        self.check_group_size(at, op, shard_count, replica_groups)?;
        let array = self.array_operand(at, op, "the operand", operand)?;
        let mut declared = array.clone();
        if let Some(d) = usize::try_from(dimension).ok().filter(|&d| d < declared.rank()) {
            declared.dims[d] /= shard_count.max(1);
        }
        let scalar = Shape::scalar(array.element_type);
        let region = self.region(at, "reducer", &[scalar.clone(), scalar], reducer)?;
        let attrs = Attributes {
            dimensions: Some(vec![dimension]),
            replica_groups: groups_attr(replica_groups),
            ..Attributes::default()
        };
        self.emit(at, op, &[operand], attrs, &[region], Some(&Shape::Array(declared)))
    }

    /// Splits `operand` into `split_count` blocks along `split_dimension`, sends block `i` to
    /// replica `i` of the group and concatenates the blocks received along
    /// `concat_dimension`, in group order. When the two dimensions differ this lowers, like
    /// XLA's builder, to a reshape, an all-to-all, a transpose and a reshape.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("m");
    /// let x = b.parameter(0, Shape::array(F32, [4, 6]), "x")?;
    /// assert_eq!(b.all_to_all(&x, 1, 0, 2, &[])?.dims(), &[8, 3]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn all_to_all(
        &self,
        operand: &Op,
        split_dimension: i64,
        concat_dimension: i64,
        split_count: i64,
        replica_groups: &[Vec<i64>],
    ) -> Result<Op> {
        let at = Location::caller();
        let op = Opcode::AllToAll;
        self.check_operands(at, op, &[operand])?;
        self.check_group_size(at, op, split_count, replica_groups)?;
        let dims = self.array_operand(at, op, "the operand", operand)?.dims.clone();
        let rank = dims.len() as i64;
        for (what, d) in [("split", split_dimension), ("concat", concat_dimension)] {
            if d < 0 || d >= rank {
                return Err(build_error(
                    at,
                    format!("{op}: {what} dimension {d} is out of range for {}", operand.shape().to_text(false)),
                ));
            }
        }
        let (split, concat) = (split_dimension as usize, concat_dimension as usize);
        if split_count <= 0 || dims[split] % split_count != 0 {
            return Err(build_error(
                at,
                format!(
                    "{op}: split dimension {split} of {} is not divisible by the split count {split_count}",
                    operand.shape().to_text(false)
                ),
            ));
        }
        let attrs = |d: usize| Attributes {
            dimensions: Some(vec![d as i64]),
            replica_groups: groups_attr(replica_groups),
            ..Attributes::default()
        };
        if split == concat {
            return self.emit(at, op, &[operand], attrs(split), &[], None);
        }
        // Dimension `split` becomes [split_count, size / split_count]; exchanging along the
        // first part leaves it indexing the source replica, which then moves in front of the
        // concat dimension and merges with it.
        let mut blocked = dims.clone();
        blocked[split] /= split_count;
        blocked.insert(split, split_count);
        let x = self.reshape_at(at, operand, &blocked)?;
        let exchanged = self.emit(at, op, &[&x], attrs(split), &[], None)?;
        let concat_blocked = if concat > split { concat + 1 } else { concat };
        let mut permutation: Vec<i64> = (0..blocked.len() as i64).filter(|&d| d != split as i64).collect();
        let position = permutation.iter().position(|&d| d == concat_blocked as i64).expect("concat dimension kept");
        permutation.insert(position, split as i64);
        let moved = self.transpose_at(at, &exchanged, &permutation)?;
        let mut out = dims;
        out[split] /= split_count;
        out[concat] *= split_count;
        self.reshape_at(at, &moved, &out)
    }

    fn transpose_at(&self, at: At, operand: &Op, permutation: &[i64]) -> Result<Op> {
        let attrs = Attributes { dimensions: Some(permutation.to_vec()), ..Attributes::default() };
        self.emit(at, Opcode::Transpose, &[operand], attrs, &[], None)
    }

    /// Replica groups, when given, have `count` members each.
    fn check_group_size(&self, at: At, op: Opcode, count: i64, groups: &[Vec<i64>]) -> Result<()> {
        if let Some(g) = groups.iter().find(|g| g.len() as i64 != count) {
            return Err(build_error(
                at,
                format!("{op}: a replica group has {} members but the count given is {count}", g.len()),
            ));
        }
        Ok(())
    }

    /// Sends `operand` from each `source` replica to its `target` (pairs `(source, target)`);
    /// replicas no pair targets get zeros.
    #[track_caller]
    pub fn collective_permute(&self, operand: &Op, source_target_pairs: &[(i64, i64)]) -> Result<Op> {
        let attrs = Attributes { source_target_pairs: Some(source_target_pairs.to_vec()), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::CollectivePermute, &[operand], attrs, &[], None)
    }

    /// This replica's id, a `u32[]`.
    #[track_caller]
    pub fn replica_id(&self) -> Result<Op> {
        self.emit(Location::caller(), Opcode::ReplicaId, &[], Attributes::default(), &[], None)
    }

    /// This partition's id, a `u32[]`.
    #[track_caller]
    pub fn partition_id(&self) -> Result<Op> {
        self.emit(Location::caller(), Opcode::PartitionId, &[], Attributes::default(), &[], None)
    }
}
