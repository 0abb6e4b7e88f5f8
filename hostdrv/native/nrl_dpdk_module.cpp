// SPDX-License-Identifier: MIT
// Python binding of the DPDK data path (nrl_dpdk.cpp) into hostdrv._native: always
// compiled; without NRL_DPDK (libdpdk not found at build time) it only says so
// (dpdk_available = False) and hostdrv.switch.dpdk / hostdrv.client.transport_dpdk refuse.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#ifdef NRL_DPDK
#include "nrl_dpdk.h"
#endif

namespace py = pybind11;

void bind_dpdk(py::module_& m) {
#ifndef NRL_DPDK
    m.attr("dpdk_available") = false;
#else
    using nrl::dpdk::Datagram;
    using nrl::dpdk::Switch;
    m.attr("dpdk_available") = true;
    m.def("dpdk_init", &nrl::dpdk::init, py::arg("eal_args") = std::vector<std::string>{},
          "Start DPDK's EAL once per process (--no-huge --no-pci -m 256 --no-shconf + "
          "eal_args); later calls do nothing");
    m.def("dpdk_initialized", &nrl::dpdk::initialized);

    py::class_<Switch>(m, "DpdkSwitch", py::module_local())
        .def(py::init([](std::shared_ptr<nrl::SharedEngine> engine, nrl::Server& server,
                         std::vector<std::string> ports, uint32_t ip, uint16_t udp) {
                 py::gil_scoped_release nogil;
                 return std::make_unique<Switch>(std::move(engine), &server, ports, ip, udp);
             }),
             py::arg("engine"), py::arg("server"), py::arg("ports"), py::arg("ip"),
             py::arg("udp"), py::keep_alive<1, 3>())
        .def("serve", &Switch::serve, py::arg("poll_ms") = 50,
             py::call_guard<py::gil_scoped_release>())
        .def("stop", &Switch::stop)
        .def("stats", &Switch::stats)
        .def("port_names", &Switch::port_names);

    py::class_<Datagram>(m, "DpdkDatagram", py::module_local())
        .def(py::init([](const std::string& devargs, uint32_t ip, uint16_t udp, uint32_t switch_ip,
                         uint16_t switch_udp, double arp_timeout) {
                 py::gil_scoped_release nogil;
                 return std::make_unique<Datagram>(devargs, ip, udp, switch_ip, switch_udp,
                                                   arp_timeout);
             }),
             py::arg("devargs"), py::arg("ip"), py::arg("udp"), py::arg("switch_ip"),
             py::arg("switch_udp"), py::arg("arp_timeout") = 1.0)
        .def_property_readonly("handle", &Datagram::handle)
        .def_property_readonly("resolved", &Datagram::resolved)
        .def_property_readonly("switch_mac",
                               [](const Datagram& d) {
                                   return py::bytes(reinterpret_cast<const char*>(d.switch_mac()), 6);
                               })
        .def("send",
             [](Datagram& d, py::buffer data) {
                 py::buffer_info b = data.request();
                 const auto* p = static_cast<const uint8_t*>(b.ptr);
                 const size_t n = size_t(b.size) * size_t(b.itemsize);
                 py::gil_scoped_release nogil;
                 d.send(p, n);
             })
        .def("send_segments",
             [](Datagram& d, py::buffer data, size_t seg) {
                 if (seg == 0) throw py::value_error("send_segments: bad seg=0");
                 py::buffer_info b = data.request();
                 const auto* p = static_cast<const uint8_t*>(b.ptr);
                 const size_t n = size_t(b.size) * size_t(b.itemsize);
                 py::gil_scoped_release nogil;
                 d.send_segments(p, n, seg);
             })
        .def("recv_into",
             [](Datagram& d, py::buffer buf, double timeout) {
                 py::buffer_info b = buf.request(true);
                 if (b.readonly) throw py::value_error("recv_into: read-only buffer");
                 auto* p = static_cast<uint8_t*>(b.ptr);
                 const size_t cap = size_t(b.size) * size_t(b.itemsize);
                 size_t seg = 0, n;
                 {
                     py::gil_scoped_release nogil;
                     n = d.recv(p, cap, timeout, &seg);
                 }
                 return py::make_tuple(n, seg);
             })
        .def("stats", &Datagram::stats);
#endif
}
