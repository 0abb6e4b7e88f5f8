// SPDX-License-Identifier: MIT
// The native parameter server (the baseline peer of hostdrv.peers.ps) and its client loop.
//
// N workers each hold one TCP connection. Per call a worker sends a PUSH (its tensor); the
// server sums the N tensors element-wise and streams the sum back to every worker while the
// pushes are still arriving. Order of addition, fixed so the sum is reproducible whatever the
// arrival order: worker id order, ((x0 + x1) + x2) + ... + x(N-1), fp32 round to nearest even
// (int32: two's complement, wrapping). Wire format (all header fields big-endian, payload
// little-endian as numpy lays it out):
//
//   request  (20 bytes): magic "NRPS" | version u8 | op u8 | dtype u8 | 0 u8 | id u32 | count u64
//       HELLO: id = worker, count = world (what the worker believes);  PUSH: id = the call's
//       sequence number (echoed), count = elements, then count * 4 payload bytes
//   reply    (24 bytes): magic | version | op | dtype | status u8 | id u32 | count u64 | detail u32
//       WELCOME (count = world) | SUM (count = elements, then the sum) | ERROR (status says why;
//       LENGTH/DTYPE_MISMATCH: count = N, then N u64 words: dtype << 56 | elements per worker,
//       all ones for a worker not in the call; WORKER_LEFT: detail = the worker;
//       TOO_LARGE: detail = the server's largest element count / 1024)
#ifndef NRL_PS_H
#define NRL_PS_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace nrl::ps {

constexpr uint8_t kMagic[4] = {'N', 'R', 'P', 'S'};
constexpr uint8_t kVersion = 1;
constexpr size_t kRequestLen = 20;
constexpr size_t kReplyLen = 24;

enum Op : uint8_t { HELLO = 1, PUSH = 2, WELCOME = 3, SUM = 4, ERROR = 5 };
enum Dtype : uint8_t { FP32 = 0, INT32 = 1 };
enum Status : uint8_t {
    OK = 0,
    LENGTH_MISMATCH = 1,  // the workers' tensors differ in length
    DTYPE_MISMATCH = 2,   // ... or in dtype
    TOO_LARGE = 3,        // a tensor above the server's max_elems
    WORKER_LEFT = 4,      // a worker's connection closed during the call
    BAD_HELLO = 5,        // worker id >= world, or the worker's world is not the server's
    DUPLICATE_WORKER = 6, // that worker id is connected already
    BAD_DTYPE = 7,        // dtype code other than FP32/INT32
};

/// The sum in the documented order, one worker at a time: acc[i] += x[i] (fp32 or int32).
void add_into(uint8_t dtype, uint8_t* acc, const uint8_t* x, size_t elems);

class Server {
public:
    /// fd: a listening TCP socket (owned by the caller); world: N workers (1..64);
    /// max_elems: the largest tensor accepted.
    Server(int fd, uint32_t world, uint64_t max_elems);
    ~Server();
    /// Serve until stop() (the caller releases the GIL).
    void serve(int poll_ms);
    void stop() { stop_.store(true); }
    /// rounds, failed_rounds, bytes_in, bytes_out, connections, polls
    std::map<std::string, uint64_t> stats();

private:
    struct Conn;
    void accept_all();
    bool read_conn(Conn& c);  // false: the connection is gone
    bool write_conn(Conn& c);
    void hello(Conn& c);
    void request(Conn& c);
    void payload_done(Conn& c);
    void fail(uint8_t status, uint32_t detail);
    void error_reply(Conn& c);
    void drop(Conn& c);
    void accumulate();
    bool round_over() const;
    void end_round();
    uint64_t ready_bytes() const;

    int fd_;
    uint32_t world_;
    uint64_t max_elems_;
    std::atomic<bool> stop_{false};
    std::vector<std::unique_ptr<Conn>> conns_;
    std::vector<Conn*> workers_;  // by worker id, null when not connected
    // the call in progress
    bool active_ = false, agreed_ = false;
    uint8_t failed_ = OK, dtype_ = FP32;
    uint32_t detail_ = 0;
    uint64_t elems_ = 0;
    std::vector<uint8_t> acc_;     // worker 0's payload, then the running sum
    std::vector<uint64_t> done_;   // per worker k: elements of acc holding x0 + ... + xk
    std::vector<uint8_t> scratch_; // payloads of a failed call are read into it and dropped
    std::mutex stats_mu_;
    uint64_t rounds_ = 0, failed_rounds_ = 0, bytes_in_ = 0, bytes_out_ = 0, accepted_ = 0,
             polls_ = 0;
};

struct CallOutcome {
    enum Code { DONE = 0, ERROR_REPLY = 1, TIMEOUT = 2, CLOSED = 3, OS_ERROR = 4, PROTOCOL = 5 };
    int code = DONE;
    uint8_t status = OK;
    uint32_t detail = 0;
    uint64_t count = 0;
    int err = 0;                     // OS_ERROR: errno
    uint64_t sent = 0, received = 0; // payload bytes so far (TIMEOUT: where it stopped)
    std::vector<uint64_t> words;     // LENGTH/DTYPE_MISMATCH: per worker dtype << 56 | elements
};

/// One PUSH and its reply on a connected socket after the HELLO: sends the request and
/// receives the sum into `out` (elems * 4 bytes) at the same time; `timeout` seconds without
/// progress is a TIMEOUT. The stream is unusable after anything but DONE or ERROR_REPLY.
CallOutcome client_call(int fd, uint32_t seq, uint8_t dtype, const uint8_t* in, uint64_t elems,
                        uint8_t* out, double timeout);

}  // namespace nrl::ps

#endif  // NRL_PS_H
