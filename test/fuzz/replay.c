/*
 * replay.c
 *	  Run a libFuzzer harness over saved inputs without libFuzzer: every
 *	  file named on the command line (directories are walked one level),
 *	  each in a child process so that a crash, a sanitizer report or an
 *	  abort fails that input only.  Ends with "N passed, N failed".
 *
 * Built with plain gcc and -fsanitize=address,undefined, it turns the
 * fuzzing corpus (seeds and every crash found) into a regression test.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int	passed = 0;
static int	failed = 0;

/* Run the harness on one file in a child; count the outcome. */
static void
replay_file(const char *path)
{
	pid_t		pid;
	int			status;

	fflush(NULL);
	pid = fork();
	if (pid == 0)
	{
		FILE	   *f = fopen(path, "rb");
		uint8_t    *buf;
		long		len;

		if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0)
			_exit(2);
		rewind(f);
		buf = malloc((size_t) len + 1);
		if (fread(buf, 1, (size_t) len, f) != (size_t) len)
			_exit(2);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t) len);
		free(buf);
		exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid ||
		!WIFEXITED(status) || WEXITSTATUS(status) != 0)
	{
		printf("not ok - %s\n", path);
		failed++;
	}
	else
		passed++;
}

int
main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
	{
		struct stat st;
		DIR		   *dir;
		struct dirent *e;

		if (stat(argv[i], &st) != 0)
		{
			printf("not ok - %s: missing\n", argv[i]);
			failed++;
			continue;
		}
		if (!S_ISDIR(st.st_mode))
		{
			replay_file(argv[i]);
			continue;
		}
		dir = opendir(argv[i]);
		while (dir && (e = readdir(dir)) != NULL)
		{
			char		path[4096];

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			replay_file(path);
		}
		if (dir)
			closedir(dir);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
