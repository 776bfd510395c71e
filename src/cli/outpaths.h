/* Output paths never clobber inputs.  Every command that writes checks, before
 * any work, that none of its outputs (--save, --log, --out, profile folders)
 * is, or would be written over, one of its inputs (--data, --model, --vocab,
 * --resume, --in ...).  Files are compared by identity (device + inode, so
 * links and different spellings of a path count) and, for outputs that do not
 * exist yet, by their folder's identity and their name.  Inputs may be glob
 * patterns (expanded) or tokenizer folders (their vocabulary files). */
#ifndef GPT2C_CLI_OUTPATHS_H
#define GPT2C_CLI_OUTPATHS_H

typedef struct {
    const char *opt;  /* "--data" */
    const char *path; /* NULL: option not given (skipped) */
} cli_path;

/* Says whether a file named `base` would be written into the output folder. */
typedef int (*cli_name_match)(const char *base, const void *user);

/* One output file: refused if it is an existing folder, or the same file as an
 * input, or the same name in the same folder.  Returns 0, or prints one line
 * "gpt2c CMD: OPT: PATH is the input given to IOPT (...)" and returns 2. */
int cli_check_output_file(const char *cmd, const char *opt, const char *out, const cli_path *ins, int nin);

/* Files an output option will create in folder `dir`, described by `match`:
 * refused if an input lies in that folder under a matching name. */
int cli_check_output_names(const char *cmd, const char *opt, const char *dir, cli_name_match match, const void *user,
                           const cli_path *ins, int nin);

/* The file names a Hugging Face model folder receives (model*.safetensors, config.json, ...). */
int cli_hf_dir_output_name(const char *base, const void *user);

/* The file names a profile folder receives (*.json, *.csv, *.txt, *.html, *.svg). */
int cli_profile_output_name(const char *base, const void *user);

#endif
