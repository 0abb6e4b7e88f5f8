// The "netrl" c10d backend: a c10d::Backend whose all-reduces go to a Python handler
// (hostdrv.client.torch_backend.SwitchHandler: the switch path, or gloo for what the
// switch cannot sum) and whose every other collective runs on an internal gloo backend.
//
// Built with torch.utils.cpp_extension at first use (hostdrv/client/torch_c10d.py), never
// by setup.py: the core wheel does not need torch. torch's dispatcher gets this object for
// the CPU device (pg._get_backend(cpu)), so TORCH_DISTRIBUTED_DEBUG=DETAIL wraps it in
// ProcessGroupWrapper and its collective fingerprint checks run.
#include <torch/extension.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/csrc/utils/pybind.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

using c10d::Backend;
using c10d::Work;
using WorkPtr = c10::intrusive_ptr<Work>;

// The work of a switch all-reduce: completes with its future. Unlike torch's
// future-wrapping work, wait() raises (DistBackendError) when the future failed, so a
// blocking dist.all_reduce reports a failed sum instead of returning stale tensors.
class NetrlWork final : public Work {
 public:
  explicit NetrlWork(c10::intrusive_ptr<c10::ivalue::Future> fut)
      : Work(-1, c10d::OpType::ALLREDUCE), fut_(std::move(fut)) {}

  bool isCompleted() override { return fut_->completed(); }
  bool isSuccess() const override { return fut_->completed() && !fut_->hasError(); }
  std::exception_ptr exception() const override {
    return fut_->completed() && fut_->hasError() ? fut_->exception_ptr() : nullptr;
  }
  std::vector<at::Tensor> result() override { return fut_->value().toTensorVector(); }

  bool wait(std::chrono::milliseconds timeout) override {
    if (timeout == kNoTimeout) {
      fut_->wait();
    } else {
      auto deadline = std::chrono::steady_clock::now() + timeout;
      while (!fut_->completed()) {
        if (std::chrono::steady_clock::now() > deadline) {
          C10_THROW_ERROR(DistBackendError, c10::str("netrl: all_reduce still running after ",
                                                     timeout.count(), " ms"));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    if (fut_->hasError()) {
      C10_THROW_ERROR(DistBackendError, fut_->tryRetrieveErrorMessage());
    }
    return true;
  }
  void synchronize() override {}
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return fut_; }

 private:
  c10::intrusive_ptr<c10::ivalue::Future> fut_;
};

class NetrlBackend final : public Backend {
 public:
  NetrlBackend(int rank, int size, py::object handler, c10::intrusive_ptr<Backend> gloo)
      : Backend(rank, size), handler_(std::move(handler)), gloo_(std::move(gloo)) {
    TORCH_CHECK(gloo_, "netrl: the internal gloo backend is missing");
  }

  ~NetrlBackend() override {
    if (Py_IsInitialized() && !_Py_IsFinalizing()) {
      py::gil_scoped_acquire gil;
      handler_ = py::object();
    } else {
      handler_.release();  // the interpreter is going: leak rather than touch it
    }
  }

  const std::string getBackendName() const override { return "netrl"; }

  py::object handler() const { return handler_; }
  c10::intrusive_ptr<Backend> gloo() const { return gloo_; }

  // -- the switch path (Python handler) ---------------------------------------------
  WorkPtr allreduce(std::vector<at::Tensor>& tensors,
                    const c10d::AllreduceOptions& opts) override {
    checkCpu(tensors, "all_reduce");
    return callHandler(tensors, opts, false);
  }

  WorkPtr allreduce_coalesced(std::vector<at::Tensor>& tensors,
                              const c10d::AllreduceCoalescedOptions& opts) override {
    checkCpu(tensors, "all_reduce_coalesced");
    return callHandler(tensors, opts, true);
  }

  // -- everything else: gloo ----------------------------------------------------------
  WorkPtr broadcast(std::vector<at::Tensor>& t, const c10d::BroadcastOptions& o) override {
    return gloo_->broadcast(t, o);
  }
  WorkPtr allreduce_sparse(std::vector<at::Tensor>& t,
                           const c10d::AllreduceOptions& o) override {
    return gloo_->allreduce_sparse(t, o);
  }
  WorkPtr reduce(std::vector<at::Tensor>& t, const c10d::ReduceOptions& o) override {
    return gloo_->reduce(t, o);
  }
  WorkPtr allgather(std::vector<std::vector<at::Tensor>>& out, std::vector<at::Tensor>& in,
                    const c10d::AllgatherOptions& o) override {
    return gloo_->allgather(out, in, o);
  }
  WorkPtr _allgather_base(at::Tensor& out, at::Tensor& in,
                          const c10d::AllgatherOptions& o) override {
    return gloo_->_allgather_base(out, in, o);
  }
  WorkPtr allgather_coalesced(std::vector<std::vector<at::Tensor>>& out,
                              std::vector<at::Tensor>& in,
                              const c10d::AllgatherOptions& o) override {
    return gloo_->allgather_coalesced(out, in, o);
  }
  WorkPtr allgather_into_tensor_coalesced(std::vector<at::Tensor>& out,
                                          std::vector<at::Tensor>& in,
                                          const c10d::AllgatherOptions& o) override {
    return gloo_->allgather_into_tensor_coalesced(out, in, o);
  }
  WorkPtr gather(std::vector<std::vector<at::Tensor>>& out, std::vector<at::Tensor>& in,
                 const c10d::GatherOptions& o) override {
    return gloo_->gather(out, in, o);
  }
  WorkPtr scatter(std::vector<at::Tensor>& out, std::vector<std::vector<at::Tensor>>& in,
                  const c10d::ScatterOptions& o) override {
    return gloo_->scatter(out, in, o);
  }
  WorkPtr reduce_scatter(std::vector<at::Tensor>& out,
                         std::vector<std::vector<at::Tensor>>& in,
                         const c10d::ReduceScatterOptions& o) override {
    return gloo_->reduce_scatter(out, in, o);
  }
  WorkPtr _reduce_scatter_base(at::Tensor& out, at::Tensor& in,
                               const c10d::ReduceScatterOptions& o) override {
    return gloo_->_reduce_scatter_base(out, in, o);
  }
  WorkPtr reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& out,
                                          std::vector<at::Tensor>& in,
                                          const c10d::ReduceScatterOptions& o) override {
    return gloo_->reduce_scatter_tensor_coalesced(out, in, o);
  }
  WorkPtr alltoall_base(at::Tensor& out, at::Tensor& in, std::vector<int64_t>& outSplits,
                        std::vector<int64_t>& inSplits,
                        const c10d::AllToAllOptions& o) override {
    return gloo_->alltoall_base(out, in, outSplits, inSplits, o);
  }
  WorkPtr alltoall(std::vector<at::Tensor>& out, std::vector<at::Tensor>& in,
                   const c10d::AllToAllOptions& o) override {
    return gloo_->alltoall(out, in, o);
  }
  void monitoredBarrier(const c10d::BarrierOptions& o, bool waitAll) override {
    gloo_->monitoredBarrier(o, waitAll);
  }
  void setSequenceNumberForGroup() override { gloo_->setSequenceNumberForGroup(); }
  uint64_t getSequenceNumberForGroup() override { return gloo_->getSequenceNumberForGroup(); }
  WorkPtr send(std::vector<at::Tensor>& t, int dst, int tag) override {
    return gloo_->send(t, dst, tag);
  }
  WorkPtr recv(std::vector<at::Tensor>& t, int src, int tag) override {
    return gloo_->recv(t, src, tag);
  }
  WorkPtr recvAnysource(std::vector<at::Tensor>& t, int tag) override {
    return gloo_->recvAnysource(t, tag);
  }
  WorkPtr barrier(const c10d::BarrierOptions& o) override { return gloo_->barrier(o); }

  void setTimeout(std::chrono::milliseconds timeout) override {
    // the switch path reads the timeout from its options; gloo gets it too
    gloo_->setTimeout(timeout);
  }

  void shutdown() override {
    {
      py::gil_scoped_acquire gil;
      if (handler_) {
        handler_.attr("shutdown")();
      }
    }
    gloo_->shutdown();
  }
  void abort() override {
    {
      py::gil_scoped_acquire gil;
      if (handler_) {
        handler_.attr("abort")();
      }
    }
    gloo_->abort();
  }

 private:
  static void checkCpu(const std::vector<at::Tensor>& tensors, const char* what) {
    for (const auto& t : tensors) {
      TORCH_CHECK(t.device().is_cpu(), "netrl: ", what, " of a ", t.device().type(),
                  " tensor: the netrl backend sums CPU tensors only (no GPU path is "
                  "built yet); copy the tensor to the CPU or use nccl for GPU tensors");
    }
  }

  // Every Python object is made and dropped under the GIL (the caller may not hold it:
  // torch releases it around collectives, DDP's reducer calls from autograd threads).
  template <typename Options>
  WorkPtr callHandler(std::vector<at::Tensor>& tensors, const Options& opts, bool coalesced) {
    py::gil_scoped_acquire gil;
    TORCH_CHECK(handler_, "netrl: the backend was shut down");
    py::object work = handler_.attr("allreduce")(tensors, py::cast(opts), coalesced);
    return work.cast<WorkPtr>();
  }

  py::object handler_;
  c10::intrusive_ptr<Backend> gloo_;
};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "The netrl c10d backend (hostdrv.client.torch_c10d builds and loads it).";
  py::module_::import("torch.distributed");  // registers c10d::Backend with pybind
  py::class_<NetrlBackend, Backend, c10::intrusive_ptr<NetrlBackend>>(m, "NetrlBackend")
      .def(py::init<int, int, py::object, c10::intrusive_ptr<Backend>>(), py::arg("rank"),
           py::arg("size"), py::arg("handler"), py::arg("gloo"))
      .def_property_readonly("handler", &NetrlBackend::handler,
                             "The Python object that runs the all-reduces.")
      .def_property_readonly("gloo", &NetrlBackend::gloo,
                             "The internal gloo backend (every other collective).");
  m.def(
      "make_work",
      [](const std::shared_ptr<torch::jit::PythonFutureWrapper>& fut) -> WorkPtr {
        return c10::make_intrusive<NetrlWork>(fut->fut);
      },
      py::arg("future"),
      "A c10d Work that completes with ``future`` and whose wait() raises "
      "DistBackendError when it failed.");
}
