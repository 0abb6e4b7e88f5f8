// SPDX-License-Identifier: MIT
// Python binding of the native parameter server and its client loop (nrl_ps.cpp), part of
// hostdrv._native (nrl_module.cpp calls bind_ps); hostdrv.peers.ps wraps them.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "nrl_ps.h"

namespace py = pybind11;

void bind_ps(py::module_& m) {
    using nrl::ps::Server;
    py::class_<Server>(m, "PsServer", py::module_local())
        .def(py::init<int, uint32_t, uint64_t>(), py::arg("fd"), py::arg("world"),
             py::arg("max_elems"))
        .def("serve", &Server::serve, py::arg("poll_ms") = 50,
             py::call_guard<py::gil_scoped_release>())
        .def("stop", &Server::stop)
        .def("stats", &Server::stats);

    m.def(
        "ps_call",
        [](int fd, uint32_t seq, uint8_t dtype, py::buffer in, py::buffer out, double timeout) {
            py::buffer_info ib = in.request(), ob = out.request(true);
            const size_t nbytes = size_t(ib.size) * size_t(ib.itemsize);
            if (nbytes % 4 || ib.itemsize != 4)
                throw py::value_error("ps_call: the input is not 4-byte elements");
            if (size_t(ob.size) * size_t(ob.itemsize) != nbytes || ob.readonly)
                throw py::value_error("ps_call: the output is not a writable buffer of the "
                                      "input's size");
            nrl::ps::CallOutcome r;
            {
                py::gil_scoped_release nogil;
                r = nrl::ps::client_call(fd, seq, dtype, static_cast<const uint8_t*>(ib.ptr),
                                         nbytes / 4, static_cast<uint8_t*>(ob.ptr), timeout);
            }
            return py::make_tuple(r.code, r.status, r.detail, r.count, r.err, r.sent, r.received,
                                  r.words);
        },
        py::arg("fd"), py::arg("seq"), py::arg("dtype"), py::arg("data"), py::arg("out"),
        py::arg("timeout"),
        "One PUSH and its reply (nrl_ps.cpp client_call), the GIL released; returns (code, "
        "status, detail, count, errno, bytes sent, bytes received, error words)");
}
