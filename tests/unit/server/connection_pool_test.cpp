// ConnectionPool: threads start on demand up to the limit, connections beyond it wait and are served when a
// thread comes free or the limit rises, idle threads end, and shutdown serves what was queued.
#include "server/connection_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

namespace tf::server {
namespace {

using namespace std::chrono_literals;

// Polls `done` for up to 5 s.
bool eventually(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Jobs that hold their thread until released, as a streaming reply holds its connection's.
struct Blockers {
  std::atomic<int> running{0}, finished{0};
  std::atomic<bool> release{false};
  std::function<void()> job() {
    return [this] {
      ++running;
      while (!release) std::this_thread::sleep_for(1ms);
      ++finished;
    };
  }
};

TEST(ConnectionPool, StartsThreadsOnDemandUpToTheLimit) {
  ConnectionPool pool(3);
  EXPECT_EQ(pool.threads(), 0u);
  Blockers b;
  for (int i = 0; i < 5; ++i) pool.enqueue(b.job());
  ASSERT_TRUE(eventually([&] { return b.running == 3; }));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(b.running, 3);  // the other two wait for a thread
  EXPECT_EQ(pool.threads(), 3u);
  EXPECT_EQ(pool.waiting(), 2u);
  b.release = true;
  ASSERT_TRUE(eventually([&] { return b.finished == 5; }));
  EXPECT_EQ(pool.threads(), 3u);
}

TEST(ConnectionPool, RaisingTheLimitServesWaitingConnections) {
  ConnectionPool pool(1);
  Blockers b;
  for (int i = 0; i < 4; ++i) pool.enqueue(b.job());
  ASSERT_TRUE(eventually([&] { return b.running == 1; }));
  pool.set_limit(4);
  EXPECT_EQ(pool.limit(), 4u);
  EXPECT_TRUE(eventually([&] { return b.running == 4; }));  // while the first still holds its thread
  b.release = true;
  ASSERT_TRUE(eventually([&] { return b.finished == 4; }));
}

TEST(ConnectionPool, AnIdleThreadServesTheNextConnection) {
  ConnectionPool pool(8);
  std::atomic<int> done{0};
  for (int i = 0; i < 20; ++i) {
    pool.enqueue([&] { ++done; });
    ASSERT_TRUE(eventually([&] { return done == i + 1; }));
  }
  // One after another: a thread that finished is reused (a second may start while the first is on its way
  // back to idle), not one thread per connection.
  EXPECT_LE(pool.threads(), 2u);
}

TEST(ConnectionPool, IdleThreadsEnd) {
  ConnectionPool pool(4, 50ms);
  Blockers b;
  for (int i = 0; i < 4; ++i) pool.enqueue(b.job());
  ASSERT_TRUE(eventually([&] { return b.running == 4; }));
  b.release = true;
  EXPECT_TRUE(eventually([&] { return pool.threads() == 0; }));
  std::atomic<bool> ran{false};
  pool.enqueue([&] { ran = true; });  // and a new one starts for the next connection
  EXPECT_TRUE(eventually([&] { return ran.load(); }));
}

TEST(ConnectionPool, ShutdownServesWhatWasQueued) {
  std::atomic<int> served{0};
  Blockers b;
  {
    ConnectionPool pool(1);
    pool.enqueue(b.job());
    for (int i = 0; i < 3; ++i) pool.enqueue([&] { ++served; });
    ASSERT_TRUE(eventually([&] { return b.running == 1; }));
    std::thread releaser([&] {
      std::this_thread::sleep_for(20ms);
      b.release = true;
    });
    pool.shutdown();
    releaser.join();
    EXPECT_EQ(pool.threads(), 0u);
    pool.enqueue([&] { ++served; });  // after shutdown: dropped
  }
  EXPECT_EQ(served, 3);
}

}  // namespace
}  // namespace tf::server
