// SPDX-License-Identifier: MIT
// Python binding of the native switch engine, its UDP server loop and the all-reduce
// client loop (hostdrv._native), and the native parameter server (nrl_ps*.cpp).
//
// hostdrv.switch.native.NativeSwitchModel wraps Engine with SwitchModel's Python
// surface; hostdrv.switch.soft runs Server (nrl_server.cpp) in a thread;
// hostdrv.client.aggregator.Aggregator._run calls agg_run (nrl_client.cpp).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <string>

#include "nrl_client.h"
#include "nrl_engine.h"
#include "nrl_server.h"

namespace py = pybind11;

#ifndef NRL_PLANT_BUG
void bind_ps(py::module_& m);  // nrl_ps_module.cpp: the native parameter server
void bind_dpdk(py::module_& m);  // nrl_dpdk_module.cpp: the DPDK data path, when built
#endif

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
    m.doc() = "netfpga-rl native switch engine (hostdrv.switch.reference.SwitchModel in C++)";
#ifdef NRL_PLANT_BUG
    // only in the copy tests/test_conformance.py builds: choose a planted bug (0: none)
    m.def("plant_bug", [](int n) { nrl::planted_bug = n; });
#else
    bind_ps(m);  // the planted-bug copy (tests/test_conformance.py) is the switch alone
    bind_dpdk(m);
#endif

    py::class_<SharedEngine, std::shared_ptr<SharedEngine>>(m, "Engine", py::module_local())
        .def(py::init([](uint32_t capacity, uint32_t record_bytes, uint32_t max_slots,
                         uint32_t max_elems, uint32_t build_hash, uint32_t jobs) {
                 if (jobs < 1 || jobs > NRL_MAX_JOBS)
                     throw py::value_error("Engine: jobs must be 1 .. " +
                                           std::to_string(NRL_MAX_JOBS));
                 return std::make_shared<SharedEngine>(capacity, record_bytes, max_slots,
                                                       max_elems, build_hash, jobs);
             }),
             py::arg("capacity"), py::arg("record_bytes"), py::arg("max_slots"),
             py::arg("max_elems"), py::arg("build_hash"), py::arg("jobs") = 1)
        .def("read",
             [](SharedEngine& s, uint32_t addr) {
                 py::gil_scoped_release nogil;
                 std::lock_guard<std::mutex> lock(s.mu);
                 if (s.eng.page_reg(addr) == nullptr) throw py::value_error("no register");
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
        .def(
            "counters",
            [](SharedEngine& s, uint32_t job) {
                if (job >= s.eng.jobs()) throw py::value_error("no such job");
                py::gil_scoped_release nogil;
                std::lock_guard<std::mutex> lock(s.mu);
                std::vector<uint32_t> v;
                size_t n;
                const nrl::RegInfo* t = nrl::reg_table(&n);
                for (size_t i = 0; i < n; ++i)
                    if (t[i].access == NRL_ACCESS_RC && !t[i].server)
                        v.push_back(s.eng.read(job * NRL_JOB_PAGE + t[i].addr));
                return v;
            },
            py::arg("job") = 0);

    py::class_<nrl::Server>(m, "Server", py::module_local())
        .def(py::init<std::shared_ptr<SharedEngine>, int, py::object, bool>(), py::arg("engine"),
             py::arg("fd"), py::arg("control"), py::arg("log_arrivals") = false)
        .def("serve", &nrl::Server::serve, py::arg("poll_ms") = 50,
             py::call_guard<py::gil_scoped_release>())
        .def("stop", &nrl::Server::stop)
        .def("stats", &nrl::Server::stats)
        .def("arrivals", &nrl::Server::arrivals);

    m.def(
        "agg_run",
        [](int fd, py::buffer sbuf, py::buffer chunks, py::buffer out, py::buffer rounds,
           py::buffer aux_of, py::buffer got_round, py::buffer taken, uint64_t n, uint32_t total,
           py::object version, uint32_t step, uint32_t slots, uint32_t window, uint32_t elems, uint32_t flags, uint32_t job,
           uint32_t worker, bool catch_up, uint32_t rpc, uint32_t poll_lag, double timeout,
           double max_backoff, uint32_t retries, bool gro, bool gso, size_t recv_bytes) {
            if (rpc == 0 || (rpc & (rpc - 1)))
                throw py::value_error("agg_run: bad rpc (rounds per call: a power of two)");
            nrl::AggArgs a{fd, n, total, !version.is_none(),
                           version.is_none() ? 0u : version.cast<uint32_t>(), step, slots, window,
                           elems, flags, job, worker, catch_up, rpc, poll_lag, timeout, max_backoff,
                           retries, gro, recv_bytes};
            const size_t words = size_t(n) * elems;
            auto need = [](const py::buffer_info& b, size_t bytes, bool writable, const char* what) {
                if (size_t(b.size) * size_t(b.itemsize) < bytes || (writable && b.readonly))
                    throw py::value_error(std::string("agg_run: bad buffer ") + what);
                return static_cast<uint8_t*>(b.ptr);
            };
            py::buffer_info sb = sbuf.request(true), cb = chunks.request(), ob = out.request(true),
                            rb = rounds.request(true), ab = aux_of.request(true),
                            gb = got_round.request(true), tb = taken.request(true);
            uint8_t* sp = need(sb, size_t(slots) * (NRL_HEADER_LEN + 4 * size_t(elems)), true, "sbuf");
            // the tensor's elements (its last chunk may be short: agg_run pads the packet)
            const uint8_t* cp = need(cb, 4 * std::min<size_t>(words, total), false, "chunks");
            uint8_t* op = need(ob, 4 * words, true, "out");
            auto* rp = reinterpret_cast<uint32_t*>(need(rb, 4 * size_t(slots), true, "rounds"));
            auto* ap = reinterpret_cast<uint32_t*>(need(ab, 4 * size_t(n), true, "aux_of"));
            auto* gp = reinterpret_cast<uint32_t*>(need(gb, 4 * size_t(n), true, "got_round"));
            uint8_t* tp = need(tb, size_t(n), true, "taken");
            nrl::AggOutcome r;
            {
                py::gil_scoped_release nogil;
                r = nrl::agg_run(a, sp, cp, op, rp, ap, gp, tp, &gso);
            }
            return py::make_tuple(r.code, py::make_tuple(r.v[0], r.v[1], r.v[2], r.v[3], r.v[4]),
                                  r.stale, r.resent, r.retrans, r.jumps, r.missing, gso);
        },
        "Aggregator._run's loop (nrl_client.cpp); taken (uint8 per chunk: answered) is read "
        "and updated; returns (code, values, stale, resent, retransmissions, jumps, missing, "
        "gso)");

    m.def(
        "replay_sample",
        [](int fd, std::vector<uint32_t> sizes, uint32_t flags, uint32_t job, uint32_t worker,
           uint32_t seq, uint32_t window, uint32_t retries, double timeout, uint32_t record_bytes,
           bool gro, size_t recv_bytes, py::buffer idx, py::buffer prio, py::buffer totals,
           py::buffer size_of, py::buffer recs, double rate_timeout) {
            size_t batch = 0;
            for (uint32_t b : sizes) batch += b;
            auto need = [](py::buffer& buf, size_t bytes, const char* what) {
                py::buffer_info b = buf.request(true);
                if (size_t(b.size) * size_t(b.itemsize) < bytes || b.readonly)
                    throw py::value_error(std::string("replay_sample: bad buffer ") + what);
                return static_cast<uint8_t*>(b.ptr);
            };
            auto* ip = reinterpret_cast<int64_t*>(need(idx, 8 * batch, "idx"));
            auto* pp = reinterpret_cast<uint32_t*>(need(prio, 4 * batch, "prio"));
            auto* tp = reinterpret_cast<uint64_t*>(need(totals, 8 * batch, "totals"));
            auto* sp = reinterpret_cast<uint32_t*>(need(size_of, 4 * batch, "size_of"));
            uint8_t* rp = need(recs, batch * record_bytes, "recs");
            nrl::SampleArgs a{fd, sizes.data(), sizes.size(), flags, job, worker, seq, window,
                              retries, timeout, record_bytes, gro, recv_bytes, rate_timeout};
            nrl::SampleOutcome r;
            {
                py::gil_scoped_release nogil;
                r = nrl::replay_sample(a, ip, pp, tp, sp, rp);
            }
            return py::make_tuple(r.code, py::make_tuple(r.v[0], r.v[1], r.v[2], r.v[3]), a.seq,
                                  r.waited);
        },
        "ReplayClient.sample's loop (nrl_client.cpp); returns (code, values, seq, waited)");
}
