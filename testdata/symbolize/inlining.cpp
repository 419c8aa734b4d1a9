// A C++ program with templates, lambdas, std containers and heavy inlining: the input of
// the symbolization agreement test against binutils addr2line (built with g++ -O2 -g).
#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <string>
#include <vector>

namespace shapes {
template <typename T>
struct Accumulator {
    T total{};
    inline void add(T v) { total += v * v; }
    inline T get() const { return total; }
};

template <typename T, typename F>
static inline T fold(const std::vector<T>& xs, F f) {
    Accumulator<T> acc;
    for (const auto& x : xs) acc.add(f(x));
    return acc.get();
}
}  // namespace shapes

static std::vector<int> make(int n) {
    std::vector<int> v(n);
    std::iota(v.begin(), v.end(), 1);
    std::sort(v.begin(), v.end(), [](int a, int b) { return (a % 7) < (b % 7); });
    return v;
}

static std::map<std::string, long> histogram(const std::vector<int>& v) {
    std::map<std::string, long> h;
    for (int x : v) h[std::to_string(x % 10)] += x;
    return h;
}

int main(int argc, char**) {
    auto v = make(1000 + argc);
    long s = shapes::fold(v, [](int x) { return static_cast<long>(x) + 1; });
    auto h = histogram(v);
    long t = 0;
    for (const auto& [k, n] : h) t += n + static_cast<long>(k.size());
    std::printf("%ld %ld\n", s, t);
    return 0;
}
