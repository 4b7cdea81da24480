// The public facade: handle, sequence, task_context, task_builder and runtime member functions,
// each checking its arguments and forwarding to the runtime core (runtime_impl).
#include "tessera/sched/runtime.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "runtime_impl.hpp"

namespace tessera {

void* handle::data() const noexcept { return _state ? _state->data : nullptr; }
std::size_t handle::bytes() const noexcept { return _state ? _state->bytes : 0; }
std::uint64_t handle::key() const noexcept { return _state ? _state->key : 0; }

bool sequence::cancelled() const noexcept {
  return _state && _state->cancelled.load(std::memory_order_acquire);
}

std::uint64_t task_context::task_id() const noexcept { return _task->id; }
void* task_context::scratch(std::size_t i) const { return _rt->scratch(_worker, _task, i); }
namespace {
detail::gpu_backend& gpu_of(detail::runtime_impl* rt, detail::task_node* t, const char* what) {
  if (!rt->gpu || t->where != device::gpu)
    throw std::logic_error(std::string("tessera::task_context::") + what + ": only GPU tasks have one");
  return *rt->gpu;
}
}  // namespace

void* task_context::stream() const { return gpu_of(_rt, _task, "stream").stream(_task->stream); }
void* task_context::blas() const { return gpu_of(_rt, _task, "blas").blas(_task->stream); }
unsigned task_context::gpu() const {
  gpu_of(_rt, _task, "gpu");
  return _task->gpu;
}
void* task_context::device_data(handle h) const {
  gpu_of(_rt, _task, "device_data");
  if (!h || !h._state->copies.on(_task->gpu).data)
    throw std::invalid_argument("tessera::task_context::device_data: the handle is not among this task's data on the GPU");
  return h._state->copies.on(_task->gpu).data;
}
std::size_t task_context::device_pitch(handle h) const {
  device_data(h);
  return h._state->copies.on(_task->gpu).pitch;
}

const void* task_context::_value(std::size_t i) const {
  if (i >= _task->value_offsets.size())
    throw std::out_of_range("tessera::task_context::value: index " + std::to_string(i) + " but the task has " +
                            std::to_string(_task->value_offsets.size()) + " values");
  return _task->value_bytes.data() + _task->value_offsets[i];
}

task_builder::~task_builder() {
  if (_task) {
    try {
      _rt->submit(_task);
    } catch (...) {
    }
  }
}

namespace {
void check_open(detail::task_node* t, const char* what) {
  if (!t) throw std::logic_error(std::string("tessera::task_builder::") + what + ": task already submitted");
}
}  // namespace

task_builder& task_builder::add(handle h, access mode) {
  check_open(_task, "add");
  if (!h) throw std::invalid_argument("tessera::task_builder::add: handle is empty (not registered)");
  _rt->add_access(_task, h._state, mode);
  return *this;
}

task_builder& task_builder::scratch(std::size_t bytes) {
  check_open(_task, "scratch");
  _task->extras = true;
  _task->scratch_bytes.push_back(bytes);
  return *this;
}

task_builder& task_builder::_add_value(const void* p, std::size_t size, std::size_t align) {
  check_open(_task, "value");
  _task->extras = true;
  auto& bytes = _task->value_bytes;
  // Offsets are aligned relative to the buffer start; the buffer itself is max-aligned by operator new.
  const std::size_t offset = detail::align_up(bytes.size(), std::max<std::size_t>(align, alignof(std::max_align_t)));
  bytes.resize(offset + size);
  std::memcpy(bytes.data() + offset, p, size);
  _task->value_offsets.push_back(offset);
  return *this;
}

task_builder& task_builder::priority(int p) {
  check_open(_task, "priority");
  _task->priority = p;
  return *this;
}

task_builder& task_builder::locality(handle h) {
  check_open(_task, "locality");
  if (!_rt->locality_used.load(std::memory_order_relaxed)) _rt->locality_used.store(true, std::memory_order_relaxed);
  _task->locality = h._state;
  return *this;
}

task_builder& task_builder::label(std::string_view name) {
  check_open(_task, "label");
  // Kept for traces and debug logs, and with a GPU backend for error messages (GPU tasks are long).
  if (_rt->tracing.load(std::memory_order_relaxed) || _rt->log_debug || _rt->gpu) {
    _task->extras = true;
    _task->label.assign(name);
  }
  return *this;
}

task_builder& task_builder::color(std::uint32_t rgb) {
  check_open(_task, "color");
  _task->extras = true;
  _task->color = rgb;
  return *this;
}

task_builder& task_builder::in(const sequence& s) {
  check_open(_task, "in");
  if (!s) throw std::invalid_argument("tessera::task_builder::in: sequence is empty (use runtime::make_sequence)");
  _task->seq = s._state.get();
  return *this;
}

task_builder& task_builder::on(device d) {
  check_open(_task, "on");
  if (d == device::gpu && !_rt->gpu)
    throw std::invalid_argument(
        "tessera::task_builder::on: device::gpu but the runtime has no GPU backend (runtime_options::gpu_streams)");
  if (d != device::gpu && _task->where == device::gpu)
    for (auto& [h, mode] : _task->accesses)
      if (h->device_only)
        throw std::invalid_argument("tessera::task_builder::on: the task accesses datum " + std::to_string(h->key) +
                                    ", which lives only in device memory (register_device_data): it must stay a GPU task");
  _task->where = d;
  return *this;
}

task_builder& task_builder::gpu(unsigned index) {
  check_open(_task, "gpu");
  if (index >= _rt->gpu_count)
    throw std::invalid_argument("tessera::task_builder::gpu: GPU " + std::to_string(index) + " but the runtime has " +
                                std::to_string(_rt->gpu_count) + " (runtime_options::gpus)");
  on(device::gpu);
  _task->gpu = static_cast<std::uint16_t>(index);
  return *this;
}

void task_builder::submit() {
  check_open(_task, "submit");
  detail::task_node* t = std::exchange(_task, nullptr);
  _rt->submit(t);
}

runtime::runtime(runtime_options options) : _impl(std::make_unique<detail::runtime_impl>(options)) {}
runtime::~runtime() = default;

handle runtime::register_data(void* data, std::size_t bytes) {
  _impl->check_caller("register_data");
  if (!data) throw std::invalid_argument("tessera::runtime::register_data: data is null (use register_key)");
  auto& h = _impl->handles.emplace_back();
  h.data = data;
  h.bytes = bytes;
  h.key = reinterpret_cast<std::uintptr_t>(data);
  h.run_bytes = h.pitch = bytes;
  if (_impl->gpu_count > 1) h.copies.more = std::make_unique<detail::device_copy[]>(_impl->gpu_count - 1);
  return handle(&h);
}

handle runtime::register_data(void* data, std::size_t run_bytes, std::size_t runs, std::size_t pitch) {
  if (pitch < run_bytes)
    throw std::invalid_argument("tessera::runtime::register_data: pitch " + std::to_string(pitch) +
                                " is smaller than run_bytes " + std::to_string(run_bytes));
  handle h = register_data(data, runs ? (runs - 1) * pitch + run_bytes : 0);
  h._state->run_bytes = run_bytes;
  h._state->runs = runs;
  h._state->pitch = pitch;
  return h;
}

handle runtime::register_device_data(void* device_ptr, std::size_t run_bytes, std::size_t runs, std::size_t pitch,
                                     unsigned gpu) {
  _impl->check_caller("register_device_data");
  if (!_impl->gpu)
    throw std::logic_error(
        "tessera::runtime::register_device_data: the runtime has no GPU backend (runtime_options::gpu_streams)");
  if (!device_ptr) throw std::invalid_argument("tessera::runtime::register_device_data: device_ptr is null");
  if (gpu >= _impl->gpu_count)
    throw std::invalid_argument("tessera::runtime::register_device_data: GPU " + std::to_string(gpu) +
                                " but the runtime has " + std::to_string(_impl->gpu_count));
  if (pitch < run_bytes)
    throw std::invalid_argument("tessera::runtime::register_device_data: pitch " + std::to_string(pitch) +
                                " is smaller than run_bytes " + std::to_string(run_bytes));
  auto& h = _impl->handles.emplace_back();
  h.key = reinterpret_cast<std::uintptr_t>(device_ptr);
  h.bytes = runs ? (runs - 1) * pitch + run_bytes : 0;
  h.run_bytes = run_bytes;
  h.runs = runs;
  h.pitch = pitch;
  h.device_only = true;
  h.gpu_touched = true;
  // Its only copy is the device one, current from the start; nothing copies it home, ever.
  if (_impl->gpu_count > 1) h.copies.more = std::make_unique<detail::device_copy[]>(_impl->gpu_count - 1);
  h.placed_gpu = static_cast<int>(gpu);
  auto& c = h.copies.on(gpu);
  c.data = device_ptr;
  c.pitch = pitch;
  c.valid = true;
  h.copies.host_valid = false;
  return handle(&h);
}

bool runtime::gpu_available() noexcept { return detail::gpu_backend::available(); }
bool runtime::has_gpu() const noexcept { return _impl->gpu != nullptr; }
unsigned runtime::gpus() const noexcept { return _impl->gpu_count; }

void runtime::place_on_device(handle h, void* device_data, std::size_t device_pitch, unsigned gpu) {
  _impl->check_caller("place_on_device");
  if (!_impl->gpu) throw std::logic_error("tessera::runtime::place_on_device: the runtime has no GPU backend");
  if (!h || !h._state->data) throw std::invalid_argument("tessera::runtime::place_on_device: handle has no host data");
  if (!device_data) throw std::invalid_argument("tessera::runtime::place_on_device: device_data is null");
  if (device_pitch < h._state->run_bytes)
    throw std::invalid_argument("tessera::runtime::place_on_device: device_pitch is smaller than the datum's run_bytes");
  if (gpu >= _impl->gpu_count)
    throw std::invalid_argument("tessera::runtime::place_on_device: GPU " + std::to_string(gpu) + " but the runtime has " +
                                std::to_string(_impl->gpu_count));
  _impl->gpu->place(h._state, device_data, device_pitch, gpu);
}

void runtime::release_device(handle h) {
  _impl->check_caller("release_device");
  if (!_impl->gpu || !h || h._state->device_only) return;  // device-only: the device copy is the datum
  auto& c = h._state->copies;
  bool kept = false;  // pool memory lives as long as the runtime; keep using it
  for (unsigned g = 0; g < _impl->gpu_count; ++g) {
    auto& d = c.on(g);
    if (d.pooled) {
      kept = true;
      continue;
    }
    d = detail::device_copy{};
  }
  if (kept) return;
  c.host_valid = true;
  c.d2h_done = nullptr;
  h._state->gpu_touched = false;
}

transfer_stats runtime::transfers() const { return _impl->gpu ? _impl->gpu->stats() : transfer_stats{}; }

handle runtime::register_key(std::uint64_t key) {
  _impl->check_caller("register_key");
  auto& h = _impl->handles.emplace_back();
  h.key = key;
  if (_impl->gpu_count > 1) h.copies.more = std::make_unique<detail::device_copy[]>(_impl->gpu_count - 1);
  return handle(&h);
}

sequence runtime::make_sequence() {
  _impl->check_caller("make_sequence");
  auto s = std::make_shared<detail::sequence_state>();
  _impl->sequences.push_back(s);
  return sequence(std::move(s));
}

void runtime::wait_all() { _impl->wait_all(); }

void runtime::wait(const sequence& s) {
  if (!s) throw std::invalid_argument("tessera::runtime::wait: sequence is empty");
  _impl->wait(*s._state);
}

std::uint64_t runtime::tasks_submitted() const noexcept {
  return _impl->submitted_total.load(std::memory_order_acquire);
}
std::uint64_t runtime::tasks_completed() const noexcept { return _impl->tasks_completed(); }

unsigned runtime::workers() const noexcept { return _impl->workers; }
std::size_t runtime::window() const noexcept { return _impl->window; }
void runtime::enable_trace(bool on) {
  _impl->check_caller("enable_trace");
  _impl->enable_trace(on);
}
const trace_data& runtime::trace() const {
  _impl->check_caller("trace");
  return _impl->trace();
}

void runtime::set_inserting_thread() {
  if (detail::current_body == _impl.get())
    throw std::logic_error("tessera::runtime::set_inserting_thread: called from inside a task body of this runtime");
  if (_impl->open_builder)
    throw std::logic_error("tessera::runtime::set_inserting_thread: a task is still being built; submit() it first");
  _impl->inserter = &detail::current_body;
}

detail::task_fn& runtime::_set_body(detail::task_node* t) { return t->body; }

}  // namespace tessera
