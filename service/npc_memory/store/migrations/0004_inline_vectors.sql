-- Keep a row's vector inline. A row of user_memories is ~2 KB (1.5 KB of vector), right at PostgreSQL's
-- TOAST threshold, so many vectors were moved out of line and every search paid a TOAST lookup per scope row.
-- With the whole row kept in the heap page, a 2,000-row scope scan took 1.5 ms instead of 2.8 ms (EXPLAIN on
-- the 10k benchmark set). Rows written before this migration keep their layout until rewritten.
ALTER TABLE user_memories SET (toast_tuple_target = 8160);
ALTER TABLE user_memories ALTER COLUMN embedding SET STORAGE MAIN;
