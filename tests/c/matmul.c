/* The C reference of the study's validation: an i-k-j double-precision matrix product of n x n
 * matrices (A all 1, B all 2), 2n^3 FLOPs by the multiply-add count. Prints n and the sum of C,
 * which is 2n^3 exactly, so a run can be checked without counters. Usage: matmul N */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 512;
    if (n <= 0) {
        fprintf(stderr, "matmul: N must be a positive integer\n");
        return 2;
    }
    double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n);
    double *c = calloc((size_t)n * n, sizeof(double));
    if (!a || !b || !c) {
        fprintf(stderr, "matmul: out of memory\n");
        return 1;
    }
    for (long i = 0; i < (long)n * n; i++) {
        a[i] = 1.0;
        b[i] = 2.0;
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++) {
            double aik = a[(long)i * n + k];
            for (int j = 0; j < n; j++)
                c[(long)i * n + j] += aik * b[(long)k * n + j];
        }
    double sum = 0.0;
    for (long i = 0; i < (long)n * n; i++)
        sum += c[i];
    printf("n=%d sum=%.0f\n", n, sum);
    free(a);
    free(b);
    free(c);
    return 0;
}
