"""The tutorial chapters' own examples, typed into a notebook as they are printed: every "wrong
way" trap gets the right diagnosis, every "right way" gets none.

The code below is copied verbatim from the chapters (comments included). Where an example also
uses names the chapter never defines (``data``, ``compute_loss``, ``image_256``...), a small
fixture defines them, so that the trap itself is reached. The chapters' first errors are names
JAX moved or never had (``jnp.softmax``, ``jax.tree_map``): the doctor names the new spelling and
its fix runs.
"""

from __future__ import annotations

import jax
import pytest

from jaxmagic import doctor


def cards(result) -> list[str]:
    return [
        o["text/html"].split('data-pitfall="')[1].split('"')[0]
        for o in result.outputs
        if "data-pitfall" in o.get("text/html", "")
    ]


def warnings_for(ip, name: str, *args: str) -> list[str]:
    """The doctor's trace-time warnings for ``name(*args)`` traced in the user's namespace."""
    fn = ip.user_ns[name]
    values = [eval(a, ip.user_ns) for a in args]
    with doctor.watch_prints() as printed:
        closed = jax.make_jaxpr(getattr(fn, "__wrapped__", fn))(*values)
    return [d.pitfall for d in doctor.observe_trace(fn, closed, printed.text)]


@pytest.fixture
def shell(ip, run):
    run("import jax\nimport jax.numpy as jnp\nfrom jax import jit\nimport numpy as np").assert_ok()
    return ip


# ------------------------------------------------------------------------------------------------
# Chapter "3、JIT编译实战" (000)


POLICY_FORWARD = """
# 一个简单的策略网络前向传播
@jit
def policy_forward(obs, weights):
    hidden = jnp.dot(obs, weights['w1']) + weights['b1']
    hidden = jnp.tanh(hidden)
    logits = jnp.dot(hidden, weights['w2']) + weights['b2']
    return jnp.softmax(logits)

# 第一次调用会触发编译
obs = jnp.array([0.1, 0.2, 0.3])
weights = {
    'w1': jnp.ones((3, 64)),
    'b1': jnp.zeros(64),
    'w2': jnp.ones((64, 4)),
    'b2': jnp.zeros(4)
}
action_probs = policy_forward(obs, weights)
"""


def test_000_policy_forward_softmax_is_a_moved_name_and_the_fix_runs(shell, run):
    result = run(POLICY_FORWARD)
    assert isinstance(result.error, AttributeError) and "softmax" in str(result.error)
    assert cards(result) == ["moved-name"]
    found = doctor.diagnose(result.error)
    assert found.where.text.strip() == "return jnp.softmax(logits)"
    assert "return jax.nn.softmax(logits)" in found.fix and found.fix.startswith("@jit\ndef policy_forward(")
    run(found.fix).assert_ok()
    run("action_probs = policy_forward(obs, weights)").assert_ok()
    assert abs(float(shell.user_ns["action_probs"].sum()) - 1.0) < 1e-6


def test_000_process_sequence_static_seq_len_is_fine(shell, run):
    run("data = jnp.ones((30, 4)); params = jnp.eye(4) * 0.5").assert_ok()  # the chapter's undefined inputs
    result = run("""
# 假设我们要实现一个可变长度的序列处理
@jit(static_argnums=(2,))  # 第3个参数（seq_len）是静态的
def process_sequence(data, model_params, seq_len):
    # 根据seq_len动态展开循环
    def body_fn(carry, x):
        # 处理单个时间步
        new_carry = jnp.dot(carry, model_params) + x
        return new_carry, new_carry
    
    # 使用jax.lax.scan进行循环展开
    final_carry, outputs = jax.lax.scan(body_fn, 
                                        jnp.zeros(model_params.shape[0]), 
                                        data[:seq_len])
    return outputs

# 调用时，seq_len必须是具体数值
result = process_sequence(data, params, 10)  # 编译一次
result2 = process_sequence(data, params, 20)  # 重新编译！
""").assert_ok()
    assert cards(result) == []


BAD_ACTIVATION = """
# ❌ 错误做法：动态条件导致分支展开
@jit
def bad_activation(x, use_relu):
    if use_relu:  # 这个条件会被Trace展开
        return jnp.maximum(0, x)
    else:
        return jnp.tanh(x)
"""

GOOD_ACTIVATION = """
# ✅ 正确做法：使用jax.lax.cond
@jit
def good_activation(x, use_relu):
    return jax.lax.cond(use_relu, 
                        lambda x: jnp.maximum(0, x), 
                        lambda x: jnp.tanh(x), 
                        x)
"""


def test_000_trap_1_python_control_flow(shell, run):
    run(BAD_ACTIVATION).assert_ok()
    result = run("bad_activation(jnp.array([-1.0, 2.0]), True)")
    assert cards(result) == ["python-control-flow"]
    found = doctor.diagnose(result.error)
    assert found.variable == "use_relu" and found.where.text.startswith("if use_relu:")
    assert found.fix.startswith('@jit(static_argnames=("use_relu",))')  # the chapter's own `jit` name
    run(found.fix).assert_ok()
    assert run("bad_activation(jnp.array([-1.0, 2.0]), True)").assert_ok().result.tolist() == [0.0, 2.0]
    run(GOOD_ACTIVATION).assert_ok()
    result = run("good_activation(jnp.array([-1.0, 2.0]), True)").assert_ok()
    assert cards(result) == [] and warnings_for(shell, "good_activation", "jnp.ones(2)", "True") == []


def test_000_trap_2_numpy_in_jit(shell, run):
    run("""
# ❌ 错误做法：混用numpy
import numpy as np

@jit
def bad_update(params, grad):
    # np.mean会返回Python标量，破坏计算图
    lr = np.mean(grad) * 0.01  
    return params - lr * grad
""").assert_ok()
    run("bad_update(jnp.ones(3), jnp.ones(3))").assert_ok()  # it runs: NumPy handed np.mean to the array
    assert warnings_for(shell, "bad_update", "jnp.ones(3)", "jnp.ones(3)") == ["numpy-on-traced-value"]
    shown = run("%jaxpr bad_update(jnp.ones(3), jnp.ones(3))").assert_ok()
    assert cards(shown) == ["numpy-on-traced-value"]
    run("""
# ✅ 正确做法：全部使用jnp
@jit
def good_update(params, grad):
    lr = jnp.mean(grad) * 0.01
    return params - lr * grad
""").assert_ok()
    assert warnings_for(shell, "good_update", "jnp.ones(3)", "jnp.ones(3)") == []


TRAIN_STEP_PRINT = """
# ❌ 错误做法：打印日志
@jit
def train_step(params, batch):
    loss = compute_loss(params, batch)
    print(f"Loss: {loss}")  # 这行会被忽略！
    return loss
"""

TRAIN_STEP_DEBUG_PRINT = """
# ✅ 正确做法：使用jax.debug.print（仅调试用）
@jit
def train_step(params, batch):
    loss = compute_loss(params, batch)
    jax.debug.print("Loss: {}", loss)  # 调试时可用
    return loss
"""


def test_000_trap_4_print_side_effect(shell, run):
    run(TRAIN_STEP_PRINT).assert_ok()
    result = run("train_step(jnp.ones(3), jnp.ones(3))")
    assert isinstance(result.error, NameError) and cards(result) == []  # compute_loss: never defined
    run("def compute_loss(params, batch):\n    return jnp.mean((params - batch) ** 2)").assert_ok()
    first = run("train_step(jnp.ones(3), jnp.ones(3))").assert_ok()
    assert "Loss: JitTracer" in first.stdout  # printed once, while tracing, and a tracer at that
    assert cards(first) == ["print-side-effect"]  # the doctor says so after the ordinary cell
    (card,) = [o for o in first.outputs if "data-pitfall" in o.get("text/html", "")]
    assert 'jax.debug.print("Loss: {}", loss)' in card["text/plain"]
    again = run("train_step(jnp.ones(3), jnp.ones(3))").assert_ok()
    assert "Loss:" not in again.stdout and cards(again) == []  # no trace, no print, no second warning
    assert warnings_for(shell, "train_step", "jnp.ones(3)", "jnp.ones(3)") == ["print-side-effect"]
    shown = run("%jaxpr train_step(jnp.ones(3), jnp.ones(3))").assert_ok()
    assert cards(shown) == ["print-side-effect"]
    run(TRAIN_STEP_DEBUG_PRINT).assert_ok()
    assert warnings_for(shell, "train_step", "jnp.ones(3)", "jnp.ones(3)") == []


RL_TRAIN_STEP = """
# 一个完整的RL训练步骤JIT示例
@jit
def rl_train_step(params, obs, actions, rewards, next_obs, dones):
    def loss_fn(params):
        # 计算TD误差
        values = policy_net(params, obs)
        next_values = policy_net(params, next_obs)
        td_target = rewards + 0.99 * next_values * (1 - dones)
        td_error = td_target - values
        
        # 策略梯度损失
        log_probs = compute_log_probs(params, obs, actions)
        policy_loss = -jnp.mean(log_probs * td_error)
        
        # 价值损失
        value_loss = jnp.mean(td_error ** 2)
        
        return policy_loss + 0.5 * value_loss
    
    loss, grads = jax.value_and_grad(loss_fn)(params)
    params = jax.tree_map(lambda p, g: p - 0.001 * g, params, grads)
    return params, loss

# 使用donate_argnums复用参数内存
rl_train_step = jit(rl_train_step, donate_argnums=(0,))
"""

RL_FIXTURE = """
def policy_net(params, obs):
    return jnp.tanh(obs @ params['w'])

def compute_log_probs(params, obs, actions):
    return jax.nn.log_softmax(obs @ params['w']) * actions

params = {'w': jnp.ones((3, 3)) * 0.1}
obs, actions, rewards, next_obs, dones = (jnp.ones((2, 3)),) * 5
"""


def test_000_rl_train_step_tree_map_bug_then_donated_params(shell, run):
    run(RL_FIXTURE).assert_ok()
    run(RL_TRAIN_STEP).assert_ok()
    result = run("new_params, loss = rl_train_step(params, obs, actions, rewards, next_obs, dones)")
    assert isinstance(result.error, AttributeError) and "tree_map" in str(result.error)
    assert cards(result) == ["moved-name"]  # jax.tree_map is gone from this JAX: jax.tree.map
    found = doctor.diagnose(result.error)
    assert "params = jax.tree.map(lambda p, g: p - 0.001 * g, params, grads)" in found.fix
    run(found.fix + "\nrl_train_step = jit(rl_train_step, donate_argnums=(0,))").assert_ok()
    run("params = {'w': jnp.ones((3, 3)) * 0.1}").assert_ok()
    run("new_params, loss = rl_train_step(params, obs, actions, rewards, next_obs, dones)").assert_ok()
    result = run("again, loss = rl_train_step(params, obs, actions, rewards, next_obs, dones)")
    assert cards(result) == ["donated-buffer"]  # params were donated by the call before
    found = doctor.diagnose(result.error)
    assert found.variable == "params"
    assert found.fix.startswith("params, loss = rl_train_step(params, obs, actions, rewards, next_obs, dones)")


# ------------------------------------------------------------------------------------------------
# Chapter "第3章 JIT编译机制" (001)


def test_001_range_over_a_traced_count_and_the_static_fix(shell, run):
    run("""
# 错误示例：动态参数影响控制流
@jax.jit
def bad_example(x, n):
    result = 0.0
    for i in range(n):  # n是动态的，编译器不知道循环次数
        result += x[i]
    return result
""").assert_ok()
    result = run("bad_example(jnp.array([1.0, 2.0, 3.0, 4.0]), 4)")
    assert cards(result) == ["traced-shape"]
    found = doctor.diagnose(result.error)
    assert found.variable == "n" and found.where.text.startswith("for i in range(n):")
    good = run("""
# 正确示例：使用static_argnums指定静态参数
@jax.jit(static_argnums=(1,))
def good_example(x, n):
    result = 0.0
    for i in range(n):  # n现在是静态的，编译时确定
        result += x[i]
    return result

# 调用
x = jnp.array([1.0, 2.0, 3.0, 4.0])
print(good_example(x, 4))  # 正常执行
""").assert_ok()
    assert "10.0" in good.stdout and cards(good) == []


def test_001_make_jaxpr_example_is_fine(shell, run):
    result = run("""
def my_func(x, y):
    return jnp.dot(x, y) + jnp.sum(x)

# 查看JAXPR中间表示
x = jnp.ones((3, 3))
y = jnp.ones((3, 3))
print(jax.make_jaxpr(my_func)(x, y))
""").assert_ok()
    assert "dot_general" in result.stdout and cards(result) == []
    assert warnings_for(shell, "my_func", "x", "y") == []


def test_001_if_x_greater_than_zero(shell, run):
    run("@jax.jit\ndef f(x):\n    if x > 0: return x\n    return -x").assert_ok()  # the chapter's "if x > 0: ..."
    assert cards(run("f(jnp.array([1.0, -2.0]))")) == ["python-control-flow"]


# ------------------------------------------------------------------------------------------------
# Chapter "4、JIT编译与性能优化" (002)


def test_002_convolution_is_fine(shell, run):
    result = run("""
@jax.jit
def compute_convolution(x, kernel):
    return jnp.convolve(x, kernel, mode='same')

# 第一次调用会触发编译，后续调用直接使用缓存
x = jnp.ones((1024,))
kernel = jnp.array([0.5, 0.25, 0.125])
result = compute_convolution(x, kernel)
""").assert_ok()
    assert cards(result) == []


RESIZE = """
from functools import partial

@partial(jax.jit, static_argnums=(1,))  # 第二个参数是静态的
def resize_image(image, target_size):
    # 假设 target_size 是 (H, W)，不会变
    return jax.image.resize(image, target_size, method='bilinear')
"""


def test_002_resize_with_static_tuple_is_fine_and_with_an_array_is_unhashable_static(shell, run):
    run("image_256 = jnp.ones((256, 256)); image_512 = jnp.ones((512, 512))").assert_ok()
    run(RESIZE).assert_ok()
    good = run("""
# 调用时，target_size 变化不会触发重新编译
img1 = resize_image(image_256, (128, 128))
img2 = resize_image(image_512, (128, 128))  # 不会重新编译
""").assert_ok()
    assert cards(good) == []
    # "我曾经犯过一个错，把 jnp.array([128, 128]) 传进去"
    result = run("img1 = resize_image(image_256, jnp.array([128, 128]))")
    assert cards(result) == ["unhashable-static"]
    found = doctor.diagnose(result.error)
    assert found.variable == "target_size" and found.fix == "img1 = resize_image(image_256, (128, 128))"
    run(found.fix).assert_ok()


def test_002_pmap_example_without_eight_devices_is_not_a_jit_trap(shell, run):
    result = run("""
# pmap 示例：多设备并行计算
@jax.pmap
def forward_pass(params, batch):
    return model.apply(params, batch)

# 假设有 8 个设备，batch 的第一个维度会被自动切分
batch = jnp.ones((64, 256, 256, 3))  # 每个设备得到 8 张图
outputs = forward_pass(params, batch)
""")
    assert result.error is not None and cards(result) == []


def test_002_gaussian_blur_eager_and_jit_are_fine(shell, run):
    run("image = jnp.ones((32, 32)); kernel = jnp.ones((5, 5)) / 25").assert_ok()
    result = run("""
def gaussian_blur(image, kernel):
    return jnp.convolve(image.flatten(), kernel.flatten(), mode='same').reshape(image.shape)

gaussian_blur_jit = jit(gaussian_blur)
_ = gaussian_blur_jit(image, kernel)
result_eager = gaussian_blur(image, kernel)
""").assert_ok()
    assert cards(result) == [] and warnings_for(shell, "gaussian_blur", "image", "kernel") == []


# ------------------------------------------------------------------------------------------------
# Chapter "4、JIT编译与性能优化：...编译缓存机制" (004)


def test_004_process_lidar_wrong_and_right(shell, run):
    run("""
# 错误示范：num_points每次变化都会触发重新编译
@jit
def process_lidar(points, num_points):
    # 只取前num_points个点
    return points[:num_points]

# 正确做法：将num_points设为静态参数
@jit(static_argnums=(1,))  # 索引1的参数是静态的
def process_lidar_fixed(points, num_points):
    return points[:num_points]

# 或者用参数名指定
@jit(static_argnames=['num_points'])
def process_lidar_named(points, num_points):
    return points[:num_points]
""").assert_ok()
    run("points = jnp.ones((100, 3))").assert_ok()
    result = run("process_lidar(points, 64)")
    assert cards(result) == ["traced-shape"]
    found = doctor.diagnose(result.error)
    assert found.variable == "num_points" and found.where.text == "return points[:num_points]"
    assert found.fix.startswith('@jit(static_argnames=("num_points",))')
    assert run("process_lidar_fixed(points, 64)").assert_ok().result.shape == (64, 3)
    assert run("process_lidar_named(points, 64)").assert_ok().result.shape == (64, 3)
    run(found.fix).assert_ok()
    assert run("process_lidar(points, 64)").assert_ok().result.shape == (64, 3)


def test_004_voxelize_and_feature_extraction_are_fine(shell, run):
    result = run("""
# 加上jit
@jit
def voxelize_points_jit(points, grid_size=64):
    indices = jnp.floor(points / 0.1).astype(jnp.int32)
    indices = jnp.clip(indices, 0, grid_size - 1)
    return indices

# 模拟一个自动驾驶感知中的特征提取模块
@jit
def extract_features(points, features_dim=128):
    # 假设这是点云特征提取
    batch_size = points.shape[0]
    features = jnp.zeros((batch_size, features_dim))
    # ... 复杂的特征计算逻辑
    return features

# 预热：用假数据触发编译
dummy_points = jnp.ones((64, 3))
_ = extract_features(dummy_points)  # 第一次调用，编译
v = voxelize_points_jit(dummy_points)
""").assert_ok()
    assert cards(result) == []
    # Passing features_dim explicitly makes it traced: then it is a shape from a traced value.
    assert cards(run("extract_features(dummy_points, 128)")) == ["traced-shape"]


def test_004_sensor_fusion_with_undefined_helpers_is_a_plain_name_error(shell, run):
    result = run("""
@jit
def sensor_fusion(lidar_features, camera_features):
    # 多传感器特征融合
    # 注意：这里没有Python控制流
    fused = jnp.concatenate([lidar_features, camera_features], axis=-1)
    fused = jax.nn.relu(fused)
    return fused

# 预热
_ = sensor_fusion(jnp.ones((1, 64)), jnp.ones((1, 128)))

# 实际推理
lidar_feat = extract_lidar_features(lidar_data)
""")
    assert isinstance(result.error, NameError) and cards(result) == []
