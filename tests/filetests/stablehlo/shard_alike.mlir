// jax.experimental.shard_alike.shard_alike(y, x) under jit on one device: JAX writes one
// `sdy.sharding_group` per value, an op without results that asks for one sharding for the
// group; on one device it computes nothing (hlojit refused the op). Expected: XLA:CPU (jax.jit).
// input: f32[8] {0, 1, 2, 3, 4, 5, 6, 7}
// expect: f32[8] {0, 3, 6, 9, 12, 15, 18, 21}
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>) -> (tensor<8xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<8xf32>
    sdy.sharding_group %1 group_id=0 : tensor<8xf32>
    sdy.sharding_group %arg0 group_id=0 : tensor<8xf32>
    %2 = stablehlo.add %1, %arg0 : tensor<8xf32>
    return %2 : tensor<8xf32>
  }
}
