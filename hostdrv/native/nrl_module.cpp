// SPDX-License-Identifier: MIT
// Python binding of the native switch engine and its UDP server loop (hostdrv._native).
//
// hostdrv.native_engine.NativeSwitchModel wraps Engine with SwitchModel's Python
// surface; hostdrv.backends.soft_server runs Server (nrl_server.cpp) in a thread.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <string>

#include "nrl_engine.h"
#include "nrl_server.h"

namespace py = pybind11;

#ifndef NRL_MODULE_NAME
#define NRL_MODULE_NAME _native
#endif

namespace {

using nrl::SharedEngine;

py::list egress_list(const nrl::Engine& e) {
    py::list out(e.out.size());
    for (size_t i = 0; i < e.out.size(); ++i) {
        const nrl::OutFrame& o = e.out[i];
        out[i] = py::make_tuple(
            py::bytes(reinterpret_cast<const char*>(e.out_buf.data() + o.off), o.len),
            int(o.ports));
    }
    return out;
}

}  // namespace

PYBIND11_MODULE(NRL_MODULE_NAME, m) {
    m.doc() = "netfpga-rl native switch engine (hostdrv.model.SwitchModel in C++)";
#ifdef NRL_PLANT_BUG
    // only in the copy tests/test_conformance.py builds: choose a planted bug (0: none)
    m.def("plant_bug", [](int n) { nrl::planted_bug = n; });
#endif

    py::class_<SharedEngine, std::shared_ptr<SharedEngine>>(m, "Engine", py::module_local())
        .def(py::init([](uint32_t capacity, uint32_t record_bytes, uint32_t max_slots,
                         uint32_t max_elems, uint32_t build_hash) {
                 return std::make_shared<SharedEngine>(capacity, record_bytes, max_slots,
                                                       max_elems, build_hash);
             }),
             py::arg("capacity"), py::arg("record_bytes"), py::arg("max_slots"),
             py::arg("max_elems"), py::arg("build_hash"))
        .def("read",
             [](SharedEngine& s, uint32_t addr) {
                 py::gil_scoped_release nogil;
                 std::lock_guard<std::mutex> lock(s.mu);
                 return s.eng.read(addr);
             })
        .def("write",
             [](SharedEngine& s, uint32_t addr, uint32_t value) {
                 std::string why;
                 int status;
                 {
                     py::gil_scoped_release nogil;
                     std::lock_guard<std::mutex> lock(s.mu);
                     status = s.eng.write(addr, value, &why);
                 }
                 return py::make_tuple(status, why);
             })
        .def("process",
             [](SharedEngine& s, py::buffer frame, int src_port) {
                 py::buffer_info info = frame.request();
                 const auto* p = static_cast<const uint8_t*>(info.ptr);
                 const size_t n = size_t(info.size) * size_t(info.itemsize);
                 {
                     py::gil_scoped_release nogil;
                     s.mu.lock();
                     s.eng.process(p, n, uint8_t(src_port));
                 }
                 py::list out = egress_list(s.eng);
                 s.mu.unlock();
                 return out;
             })
        .def("counters", [](SharedEngine& s) {
            py::gil_scoped_release nogil;
            std::lock_guard<std::mutex> lock(s.mu);
            std::vector<uint32_t> v;
            size_t n;
            const nrl::RegInfo* t = nrl::reg_table(&n);
            for (size_t i = 0; i < n; ++i)
                if (t[i].access == NRL_ACCESS_RC && !t[i].server) v.push_back(s.eng.read(t[i].addr));
            return v;
        });

    py::class_<nrl::Server>(m, "Server", py::module_local())
        .def(py::init<std::shared_ptr<SharedEngine>, int, py::object, bool>(), py::arg("engine"),
             py::arg("fd"), py::arg("control"), py::arg("log_arrivals") = false)
        .def("serve", &nrl::Server::serve, py::arg("poll_ms") = 50,
             py::call_guard<py::gil_scoped_release>())
        .def("stop", &nrl::Server::stop)
        .def("stats", &nrl::Server::stats)
        .def("arrivals", &nrl::Server::arrivals);
}
