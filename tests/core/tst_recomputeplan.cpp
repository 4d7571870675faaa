// The recompute spread over ranks, without MPI (core/recompute/recomputeplan.h): the split keeps a file's
// dumps on one rank, balances the ranks by bytes (largest file first, ties to the lower rank), gives every
// dump to exactly one rank, and is the same however often it is made; what travels decodes to what was
// encoded, doubles bit for bit, and anything else decodes to nothing.
#include "core/recompute/recomputeplan.h"
#include "testmain.h"

#include <QTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>

using namespace fp8scope;

namespace {

std::vector<RecomputeItem> work(int files, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int64_t> size(1, 1000000);
    std::vector<RecomputeItem> out;
    for (int f = 0; f < files; ++f) {
        const int64_t bytes = size(rng);
        for (int d = 0; d < 1 + f % 3; ++d)
            out.push_back({{1, QStringLiteral("dump_%1.h5").arg(f),
                               {QStringLiteral("t%1").arg(d), QStringLiteral("l"), QStringLiteral("w"), int64_t(f),
                                   QStringLiteral("bf16"), QStringLiteral("8x8")}},
                bytes});
    }
    return out;
}

} // namespace

class TestRecomputePlan : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void splitKeepsFilesTogetherAndBalances()
    {
        for (int ranks : {1, 2, 3, 7, 40}) {
            const auto w = work(25, uint32_t(ranks));
            const auto split = splitByFile(w, ranks);
            QCOMPARE(int(split.size()), ranks);
            QCOMPARE(splitByFile(w, ranks), split); // deterministic
            std::vector<int> owner(w.size(), -1);
            std::vector<int64_t> load(size_t(ranks), 0);
            std::map<QString, int> fileRank;
            for (int r = 0; r < ranks; ++r) {
                QVERIFY(std::is_sorted(split[size_t(r)].begin(), split[size_t(r)].end()));
                std::set<QString> counted;
                for (size_t i : split[size_t(r)]) {
                    QCOMPARE(owner[i], -1);
                    owner[i] = r;
                    const auto [it, fresh] = fileRank.emplace(w[i].ref.file, r);
                    QCOMPARE(it->second, r); // a file's dumps on one rank
                    if (counted.insert(w[i].ref.file).second)
                        load[size_t(r)] += w[i].fileBytes;
                }
            }
            QVERIFY(std::find(owner.begin(), owner.end(), -1) == owner.end());
            // Greedy largest-first: no rank exceeds another by more than the largest file.
            int64_t largest = 0;
            for (const auto &x : w)
                largest = std::max(largest, x.fileBytes);
            if (ranks <= 25)
                QVERIFY(*std::max_element(load.begin(), load.end()) - *std::min_element(load.begin(), load.end())
                    <= largest);
        }
        // Ties go to the lower rank: two files of one size over two ranks, the larger name second.
        std::vector<RecomputeItem> tie {{{1, QStringLiteral("b.h5"), {}}, 10}, {{1, QStringLiteral("a.h5"), {}}, 10}};
        const auto split = splitByFile(tie, 2);
        QCOMPARE(split[0], std::vector<size_t> {1});
        QCOMPARE(split[1], std::vector<size_t> {0});
        // More ranks than files: the others have nothing.
        QCOMPARE(splitByFile(tie, 3)[2].size(), size_t(0));
    }

    void whatTravelsComesBackExactly()
    {
        RecomputeBroadcast b {.work = work(5, 3),
            .recipes = {QStringLiteral("current"), QStringLiteral("mxfp8")},
            .folder = QStringLiteral("/data/run"),
            .error = QString()};
        const auto back = decodeBroadcast(encodeBroadcast(b));
        QVERIFY(back);
        QCOMPARE(back->work.size(), b.work.size());
        for (size_t i = 0; i < b.work.size(); ++i) {
            QCOMPARE(back->work[i].ref.file, b.work[i].ref.file);
            QCOMPARE(back->work[i].ref.dump.dataset, b.work[i].ref.dump.dataset);
            QCOMPARE(back->work[i].ref.dump.step, b.work[i].ref.dump.step);
            QCOMPARE(back->work[i].fileBytes, b.work[i].fileBytes);
        }
        QCOMPARE(back->recipes, b.recipes);
        QCOMPARE(back->folder, b.folder);

        DumpResult r {
            .index = 7, .error = QString(), .recipes = {}, .bytesRead = 123456789, .seconds = 0.25, .metrics = {}};
        const double odd[] = {0.1, -0.0, std::numeric_limits<double>::quiet_NaN(),
            std::numeric_limits<double>::infinity(), std::numeric_limits<double>::denorm_min(), 1.0 / 3.0};
        std::vector<std::pair<QString, double>> stats;
        for (size_t i = 0; i < std::size(odd); ++i)
            stats.emplace_back(QStringLiteral("s%1").arg(i), odd[i]);
        r.recipes = {{QStringLiteral("current"), stats}, {QStringLiteral("mxfp8"), stats}};
        const auto rb = decodeResult(encodeResult(r));
        QVERIFY(rb);
        QCOMPARE(rb->index, 7u);
        QCOMPARE(rb->bytesRead, int64_t(123456789));
        QCOMPARE(rb->recipes.size(), size_t(2));
        for (const auto &[label, s] : rb->recipes) {
            QCOMPARE(s.size(), stats.size());
            for (size_t i = 0; i < s.size(); ++i)
                QVERIFY(std::memcmp(&s[i].second, &odd[i], sizeof(double)) == 0);
        }
        DumpResult failed {.index = 2, .error = QStringLiteral("dump_3.h5: inflate failed")};
        QCOMPARE(decodeResult(encodeResult(failed))->error, failed.error);

        // Not what encode wrote: nothing (a result is not a broadcast, truncated bytes are not a result).
        QVERIFY(!decodeBroadcast(encodeResult(r)));
        QVERIFY(!decodeResult(encodeBroadcast(b)));
        const QByteArray whole = encodeResult(r);
        QVERIFY(!decodeResult(whole.left(whole.size() - 3)));
        QVERIFY(!decodeResult(whole + "x"));
        QVERIFY(!decodeResult(QByteArray()));
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestRecomputePlan)
#include "tst_recomputeplan.moc"
