// The curve view's smoothing against the formulas its header states, written out independently here.
#include "core/analysis/smoothing.h"

#include <QTest>

#include <cmath>

using namespace fp8scope;

class TestSmoothing : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void emaIsDebiased();
    void runningMeanIsCentred();
    void gaussianNormalisesAtTheEdges();
    void nanPassesThrough();
    void zeroStrengthIsIdentity();
};

void TestSmoothing::emaIsDebiased()
{
    const std::vector<double> x {4, 2, 8, 6};
    const double w = 0.5;
    const auto s = smooth(x, Smoothing::Ema, w);
    // a0 = 0.5*4 = 2 -> 2/(1-0.5) = 4; a1 = 1+1 = 2 -> 2/0.75; a2 = 1+4 = 5 -> 5/0.875; a3 = 2.5+3 -> 5.5/0.9375
    QCOMPARE(s.size(), size_t(4));
    QCOMPARE(s[0], 4.0);
    QCOMPARE(s[1], 2.0 / 0.75);
    QCOMPARE(s[2], 5.0 / 0.875);
    QCOMPARE(s[3], 5.5 / 0.9375);
}

void TestSmoothing::runningMeanIsCentred()
{
    std::vector<double> x(9);
    for (size_t i = 0; i < x.size(); ++i)
        x[i] = double(i * i);
    const double strength = 0.04; // half-width round(0.04 * 50) = 2
    QCOMPARE(smoothingHalfWidth(strength), 2);
    const auto s = smooth(x, Smoothing::RunningMean, strength);
    QCOMPARE(s[0], (0.0 + 1 + 4) / 3);
    QCOMPARE(s[1], (0.0 + 1 + 4 + 9) / 4);
    QCOMPARE(s[4], (4.0 + 9 + 16 + 25 + 36) / 5);
    QCOMPARE(s[8], (36.0 + 49 + 64) / 3);
}

void TestSmoothing::gaussianNormalisesAtTheEdges()
{
    const std::vector<double> x {1, 5, 2, 7, 3, 3, 9};
    const double strength = 0.06; // h = 3, sigma = 1
    const auto s = smooth(x, Smoothing::Gaussian, strength);
    auto expected = [&](int i) {
        double num = 0, den = 0;
        for (int j = std::max(0, i - 3); j <= std::min(6, i + 3); ++j) {
            const double w = std::exp(-0.5 * (j - i) * (j - i));
            num += w * x[size_t(j)];
            den += w;
        }
        return num / den;
    };
    for (int i = 0; i < 7; ++i)
        QVERIFY2(std::abs(s[size_t(i)] - expected(i)) < 1e-12, qPrintable(QString::number(i)));
    // A constant series stays constant everywhere, edges included.
    const auto flat = smooth(std::vector<double>(7, 2.5), Smoothing::Gaussian, strength);
    for (double v : flat)
        QCOMPARE(v, 2.5);
}

void TestSmoothing::nanPassesThrough()
{
    const std::vector<double> x {1, NAN, 3};
    const auto e = smooth(x, Smoothing::Ema, 0.5);
    QVERIFY(std::isnan(e[1]));
    // The NaN is skipped: a1 = 0.5*0.5 + 0.5*3 = 1.75 over (1 - 0.25).
    QCOMPARE(e[2], 1.75 / 0.75);
    const auto m = smooth(x, Smoothing::RunningMean, 0.02); // h = 1
    QVERIFY(std::isnan(m[1]));
    QCOMPARE(m[0], 1.0);
    QCOMPARE(m[2], 3.0);
}

void TestSmoothing::zeroStrengthIsIdentity()
{
    const std::vector<double> x {3, 1, 4, 1, 5};
    for (Smoothing k : {Smoothing::None, Smoothing::Ema, Smoothing::RunningMean, Smoothing::Gaussian})
        QCOMPARE(smooth(x, k, 0.0), x);
}

QTEST_APPLESS_MAIN(TestSmoothing)
#include "tst_smoothing.moc"
