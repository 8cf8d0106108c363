// Evaluate one correction of a correctionlib JSON file at the (x, y) points of
// a text file (two numbers per line); print one value per line, to 17 digits.
//
// usage: evaluate_correction FILE.json NAME POINTS.txt
#include <fstream>
#include <iomanip>
#include <iostream>

#include "correction.h"

int main(int argc, char** argv) {
    if (argc != 4) {
        std::cerr << "usage: " << argv[0] << " FILE.json NAME POINTS.txt\n";
        return 2;
    }
    auto corrections = correction::CorrectionSet::from_file(argv[1]);
    auto gamma = corrections->at(argv[2]);
    std::ifstream points(argv[3]);
    if (!points) {
        std::cerr << "cannot read " << argv[3] << "\n";
        return 2;
    }
    std::cout << std::setprecision(17);
    double x, y;
    while (points >> x >> y) {
        std::cout << gamma->evaluate({x, y}) << "\n";
    }
    return 0;
}
